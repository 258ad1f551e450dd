// The op table: every op kiln knows is declared once, as an OpDef carrying its schema,
// shape inference, cost and reference kernel. The importer, verifier, shape inference,
// interpreter, `kiln graph` and (later) the profiler and perf model all read this table.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::ops {

// ai.onnx opsets kiln imports.
constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;

struct AttrSpec {
  std::string_view name;
  AttrKind kind;
  bool required = false;
};

// Work and traffic of one node, from its concrete shapes. Bytes count each input and
// output tensor once (what a kernel must at least move), not cache effects.
struct Cost {
  double flops = 0;          // multiply-add = 2 flops; other arithmetic 1 each
  double bytes_read = 0;
  double bytes_written = 0;
};

// ---- shape inference -----------------------------------------------------------
class InferContext {
 public:
  using KnownValues = std::map<const Value*, Tensor>;
  // `known`: values computed during inference (small shape computations), besides initializers.
  InferContext(const Node& node, int64_t opset, const KnownValues* known = nullptr)
      : node_(node), opset_(opset), known_(known) {}
  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  size_t num_inputs() const { return node_.inputs.size(); }
  size_t num_outputs() const { return node_.outputs.size(); }
  bool has_input(size_t i) const { return i < node_.inputs.size() && node_.inputs[i] != nullptr; }
  bool has_output(size_t i) const { return i < node_.outputs.size() && node_.outputs[i] != nullptr; }
  DType in_dtype(size_t i) const;
  const Shape& in_shape(size_t i) const;
  // Value of input i when it is known at compile time (initializer or folded constant).
  const Tensor* in_const(size_t i) const;
  void set_output(size_t i, DType dtype, Shape shape);
  // Throws kiln::Error prefixed with the node's description.
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const Node& node_;
  int64_t opset_;
  const KnownValues* known_;
};
using InferFn = void (*)(InferContext&);

// ---- cost ----------------------------------------------------------------------
struct CostContext {
  const Node& node;
  std::vector<std::vector<int64_t>> in_dims;   // concrete dims; empty for a missing input
  std::vector<DType> in_dtypes;
  std::vector<std::vector<int64_t>> out_dims;
  std::vector<DType> out_dtypes;
  // Bytes of every present input and output, each once.
  double io_bytes_read() const;
  double io_bytes_written() const;
};
using CostFn = Cost (*)(const CostContext&);

// ---- reference kernel ----------------------------------------------------------
class KernelContext {
 public:
  using SubgraphRunner =
      std::function<std::vector<Tensor>(const Graph&, const std::vector<Tensor>&)>;

  KernelContext(const Node& node, int64_t opset, std::vector<const Tensor*> inputs,
                SubgraphRunner run_subgraph = nullptr, int threads = 1)
      : node_(node), opset_(opset), inputs_(std::move(inputs)),
        outputs_(node.outputs.size()), run_subgraph_(std::move(run_subgraph)), threads_(threads) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  int threads() const { return threads_; }
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  const Tensor& input(size_t i) const;  // throws if missing
  size_t num_outputs() const { return outputs_.size(); }
  bool has_output(size_t i) const { return i < node_.outputs.size() && node_.outputs[i] != nullptr; }
  Tensor& alloc_output(size_t i, DType dtype, std::vector<int64_t> dims);
  void set_output(size_t i, Tensor t);
  // Storage the caller has already placed for output i (the compiled runtime's arena):
  // alloc_output(i, ...) then returns a tensor over *t when dtype and dims match, zero-filled
  // like a fresh allocation unless keep_contents (the output overwrites a dying input in place,
  // which only elementwise kernels are asked to do). Otherwise it allocates as usual.
  void use_preallocated(size_t i, const Tensor* t, bool keep_contents = false);
  std::vector<Tensor>& outputs() { return outputs_; }
  // Runs a subgraph (If/Loop/Scan) with its formal inputs bound to `inputs`; outer values
  // are visible to it. Returns its outputs.
  std::vector<Tensor> run_subgraph(const Graph& g, const std::vector<Tensor>& inputs) const;
  [[noreturn]] void fail(const std::string& msg) const;

 private:
  const Node& node_;
  int64_t opset_;
  std::vector<const Tensor*> inputs_;
  std::vector<Tensor> outputs_;
  struct Preallocated {
    const Tensor* tensor = nullptr;
    bool keep_contents = false;
  };
  std::vector<Preallocated> preallocated_;  // empty unless use_preallocated was called
  SubgraphRunner run_subgraph_;
  int threads_;
};
using KernelFn = void (*)(KernelContext&);

struct OpDef {
  std::string_view name;          // "Conv"
  std::string_view domain = "";   // "" = ai.onnx
  int64_t since = 1;              // first opset version with this op
  int min_inputs = 0, max_inputs = 0;    // max -1 = variadic
  int min_outputs = 1, max_outputs = 1;  // max -1 = variadic
  std::vector<AttrSpec> attrs;    // attributes the op understands
  InferFn infer = nullptr;
  CostFn cost = nullptr;          // nullptr = default (elementwise-like: 1 flop per output element)
  KernelFn kernel = nullptr;
  std::string_view doc;           // one line: what it computes
};

// The whole table, in declaration order.
const std::vector<const OpDef*>& all_ops();
// nullptr when kiln has no such op.
const OpDef* find_op(std::string_view domain, std::string_view name);

// Checks arity and attributes of every node (recursively) against the table and the
// model's opset; throws kiln::Error naming node, op and opset. Calls verify_structure.
void verify_model(const Model& m);

// Infers dtype and shape of every value (recursively into subgraphs) after binding
// symbolic dims of the graph inputs. Static dims flow through; symbolic dims are kept
// where an op passes them on. Throws kiln::Error naming the node on a mismatch.
void infer_shapes(Model& m, const DimBindings& bindings = {});

// Cost of one node with all its shapes static (nullopt otherwise). Symbolic dims found in
// `assume` are taken at that size (e.g. N=1 to report per-sample costs of a dynamic model).
std::optional<Cost> node_cost(const Node& n, const DimBindings& assume = {});

// The then_branch and else_branch of an ONNX If that the compiler optimizes and lowers like the
// main graph and the compiled runtime runs as planned branches (both graphs present, without
// inputs, with one output per If output); empty for every other node (Loop and Scan bodies run
// on the reference kernels). Anything malformed is left to the If reference kernel's messages.
std::vector<Graph*> compiled_branches(const Node& n);

}  // namespace kiln::ops
