// The graph IR: values, nodes with typed attributes, graphs with subgraphs, models.
//
// Ownership: a Graph owns its Nodes and the Values they define (node outputs, graph
// inputs, initializers). Node inputs are plain pointers to Values, which may live in
// an enclosing graph (control-flow subgraphs read outer values). Nodes are kept in
// topological order. A missing optional input is a nullptr.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/ir/shape.h"
#include "kiln/ir/tensor.h"

namespace kiln {

class Graph;
class Node;

enum class AttrKind : uint8_t { Int, Float, String, Tensor, Graph, Ints, Floats, Strings };
std::string_view attr_kind_name(AttrKind k);  // "int", "float", ..., "ints"

class Attribute {
 public:
  using Value = std::variant<int64_t, float, std::string, kiln::Tensor, std::shared_ptr<kiln::Graph>,
                             std::vector<int64_t>, std::vector<float>, std::vector<std::string>>;
  Attribute() : v_(int64_t{0}) {}
  Attribute(int64_t v) : v_(v) {}                          // NOLINT
  Attribute(int v) : v_(int64_t{v}) {}                     // NOLINT
  Attribute(float v) : v_(v) {}                            // NOLINT
  Attribute(std::string v) : v_(std::move(v)) {}           // NOLINT
  Attribute(const char* v) : v_(std::string(v)) {}         // NOLINT
  Attribute(kiln::Tensor v) : v_(std::move(v)) {}          // NOLINT
  Attribute(std::shared_ptr<kiln::Graph> g) : v_(std::move(g)) {}  // NOLINT
  Attribute(std::vector<int64_t> v) : v_(std::move(v)) {}  // NOLINT
  Attribute(std::vector<float> v) : v_(std::move(v)) {}    // NOLINT
  Attribute(std::vector<std::string> v) : v_(std::move(v)) {}  // NOLINT

  AttrKind kind() const { return static_cast<AttrKind>(v_.index()); }
  int64_t i() const { return get<int64_t>(); }
  float f() const { return get<float>(); }
  const std::string& s() const { return get<std::string>(); }
  const kiln::Tensor& t() const { return get<kiln::Tensor>(); }
  const std::shared_ptr<kiln::Graph>& g() const { return get<std::shared_ptr<kiln::Graph>>(); }
  const std::vector<int64_t>& ints() const { return get<std::vector<int64_t>>(); }
  const std::vector<float>& floats() const { return get<std::vector<float>>(); }
  const std::vector<std::string>& strings() const { return get<std::vector<std::string>>(); }
  const Value& variant() const { return v_; }

 private:
  template <typename T>
  const T& get() const {
    const T* p = std::get_if<T>(&v_);
    KILN_CHECK(p != nullptr, "attribute is ", attr_kind_name(kind()), ", not the requested kind");
    return *p;
  }
  Value v_;
};

class Value {
 public:
  std::string name;
  DType dtype = DType::undefined;
  Shape shape = Shape::unknown_rank();
  Node* producer = nullptr;               // nullptr for graph inputs and initializers
  std::optional<Tensor> initializer;      // set for weights/constants stored in the graph
  Graph* owner = nullptr;                 // graph that defines this value

  bool is_constant() const { return initializer.has_value(); }
};

class Node {
 public:
  std::string op;        // "Conv"
  std::string domain;    // "" for the default ONNX domain
  std::string name;      // may be empty in the source model; import fills a unique one
  std::vector<Value*> inputs;   // nullptr = optional input omitted
  std::vector<Value*> outputs;  // nullptr = optional output omitted
  std::map<std::string, Attribute> attrs;
  Graph* owner = nullptr;

  bool has_attr(const std::string& k) const { return attrs.count(k) != 0; }
  const Attribute* find_attr(const std::string& k) const {
    auto it = attrs.find(k);
    return it == attrs.end() ? nullptr : &it->second;
  }
  int64_t attr_i(const std::string& k, int64_t dflt) const;
  float attr_f(const std::string& k, float dflt) const;
  std::string attr_s(const std::string& k, const std::string& dflt) const;
  std::vector<int64_t> attr_ints(const std::string& k, const std::vector<int64_t>& dflt) const;
  std::vector<float> attr_floats(const std::string& k, const std::vector<float>& dflt) const;
  Value* input(size_t i) const { return i < inputs.size() ? inputs[i] : nullptr; }
  // Subgraphs held in attributes (If branches, Loop/Scan bodies).
  std::vector<Graph*> subgraphs() const;
  // "Conv 'resnet/conv1'" — used in error messages.
  std::string describe() const;
};

class Graph {
 public:
  std::string name;
  std::vector<Value*> inputs;      // graph inputs, in order (not initializers)
  std::vector<Value*> outputs;     // graph outputs, in order
  std::vector<Value*> initializers;  // values with initializer data, in order
  Graph* parent = nullptr;         // enclosing graph, for subgraphs

  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  // Creating values and nodes. Names must be unique within this graph (and should not
  // shadow outer values); add_value throws kiln::Error on a duplicate name.
  Value* add_value(const std::string& name, DType dtype = DType::undefined,
                   Shape shape = Shape::unknown_rank());
  Value* add_input(const std::string& name, DType dtype, Shape shape);
  Value* add_initializer(const std::string& name, Tensor t);
  // Appends a node; creates its output values with the given names ("" = omitted output).
  Node* add_node(const std::string& op, const std::vector<Value*>& inputs,
                 const std::vector<std::string>& output_names,
                 std::map<std::string, Attribute> attrs = {}, const std::string& name = "",
                 const std::string& domain = "");

  // Looks a value up by name here, then in enclosing graphs. nullptr when absent.
  Value* find(const std::string& name) const;
  Value* find_local(const std::string& name) const;

  const std::vector<std::unique_ptr<Node>>& nodes() const { return nodes_; }
  std::vector<std::unique_ptr<Node>>& mutable_nodes() { return nodes_; }
  const std::vector<std::unique_ptr<Value>>& values() const { return values_; }

  // Removes the node (its outputs must have no users). Invalidates node iterators.
  void remove_node(Node* n);
  // Removes a value no node produces and nothing reads (e.g. an unused initializer, or a value
  // a pass detached from its producer); drops it from `initializers`. Throws if still in use.
  void remove_value(Value* v);
  // Nodes (in this graph and nested subgraphs) that read v.
  std::vector<Node*> users(const Value* v) const;
  // Replaces every use of `from` (in nodes, nested subgraphs and graph outputs) by `to`.
  void replace_all_uses(Value* from, Value* to);
  // A name not yet used in this graph, built from `base`.
  std::string unique_name(const std::string& base);

 private:
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<std::unique_ptr<Value>> values_;
  std::map<std::string, Value*> by_name_;
  uint64_t name_counter_ = 0;
};

// A model: the main graph plus the opsets it was written against.
struct Model {
  std::shared_ptr<Graph> graph = std::make_shared<Graph>();
  std::map<std::string, int64_t> opsets;  // domain ("" = ai.onnx) -> version
  int64_t ir_version = 8;
  std::string producer_name;
  std::string producer_version;
  std::string source_path;  // file it was loaded from, if any

  int64_t opset(const std::string& domain = "") const {
    auto it = opsets.find(domain);
    return it == opsets.end() ? 0 : it->second;
  }
};

// Structural checks: every input is defined before use (or in an enclosing graph),
// names are unique, outputs are produced, nodes are in topological order.
// Throws kiln::Error naming the offending node and value. Op-level checks (arity,
// attributes) live in ops::verify_ops, which builds on this.
void verify_structure(const Graph& g);

}  // namespace kiln
