// One input shape of a compiled model, ready to run: its memory plan, the arena, a tensor for
// every planned value (bound once) and the steps. Running it is a loop over the steps.
//
// Control flow: each branch of an ONNX If is an instance of its own (a "branch instance"), made
// with the enclosing instance from the same shape inference: its own plan, arena and steps, fast
// kernels included, reading the enclosing instances' tensors for the values it takes from outside.
// The If step reads its condition and runs one of its two branch instances; nothing goes through
// the interpreter. Loop and Scan bodies still run on the reference kernels (run_subgraph).
#pragma once
#include <array>
#include <chrono>
#include <functional>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kiln/kernels/parallel.h"
#include "kiln/ops/op.h"
#include "kiln/plan/plan.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {

// A graph input's storage: the caller's bytes, pointed at anew on every run, so tensors over it
// (the input and views of it) are made once.
class BorrowedBuffer : public Buffer {
 public:
  BorrowedBuffer(void* p, size_t size) : p_(p), size_(size) {}
  void set(void* p) { p_ = p; }
  void* data() override { return p_; }
  size_t size() const override { return size_; }

 private:
  void* p_;
  size_t size_;
};

// Whether a value of this kind keeps its bytes where they are for a whole run (a graph input, a
// weight, the arena, or a view of those), so that a branch may view it instead of copying it;
// Dynamic and Output tensors are replaced between runs.
inline bool bytes_stay_put(plan::ValueKind k) {
  return k == plan::ValueKind::Input || k == plan::ValueKind::Weight || k == plan::ValueKind::Arena ||
         k == plan::ValueKind::View;
}

// What profile_run records: every step that ran, branch steps included, with the time since the
// start of the run at which it ended (an If's own entry comes after its branch's steps).
// rerun: each fast step that writes nothing it reads runs a second time right after itself,
// timed on its own (again_ms; -1 where it did not run again); resume_ms is when that ended, from
// where the next step's time counts.
struct StepTrace {
  std::chrono::steady_clock::time_point start;
  bool rerun = false;
  struct Entry {
    const Node* node = nullptr;
    bool fast = false;
    double end_ms = 0;
    double again_ms = -1;
    double resume_ms = 0;
    int64_t fetch_ahead_bytes = 0;        // StepContext::warm_bytes, when fetching ahead was on
    const Node* fetch_ahead_for = nullptr;  // StepContext::warm_for
    bool has_pool = false;  // kernels::pool_stats_on() during the run: `pool` is the step's
    kernels::PoolStats pool;
  };
  std::vector<Entry> entries;
};

class ShapeInstance {
 public:
  // Infers shapes for these inputs on `model` (restored afterwards), prepares fast kernels,
  // plans memory and binds every tensor, for the main graph and every If branch in it.
  // `inputs` are in graph-input order, none missing.
  ShapeInstance(Model& model, const KernelLibrary* library, const std::vector<const Tensor*>& inputs,
                const DimBindings& bindings, int max_threads);
  ~ShapeInstance();

  // Same dtypes and dims as the inputs this instance was made for (allocation-free).
  bool matches(const std::vector<const Tensor*>& inputs) const;
  // Runs the steps; outputs in graph-output order (see Executable::run for buffer reuse).
  // `trace` (profile_run): when given, receives an entry per step that ran.
  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, int threads,
           StepTrace* trace = nullptr);

  const plan::Plan& plan() const { return plan_; }
  uint64_t last_used = 0;

  // A node's fast kernel and its context after prepare.
  struct Prepared {
    const FastKernel* kernel = nullptr;
    StepContext ctx;
  };

 private:
  struct Step {
    StepContext ctx;
    const FastKernel* fast = nullptr;
    const ops::OpDef* def = nullptr;  // reference kernel when there is no fast one
    std::vector<int> out_values;      // plan value per output (-1: omitted)
    std::vector<bool> keep_contents;  // per output: no zero fill (in place, or fully written)
    bool has_subgraphs = false;
    // An If: its then and else branch instances (null for other nodes).
    std::array<std::unique_ptr<ShapeInstance>, 2> branch;
  };

  // A branch instance of `outer` (whose plan is made): planned from the shapes inference left on
  // `g` (phase one); bound later by bind_branch, once the enclosing instance's tensors exist.
  ShapeInstance(const Model& model, const Graph& g, const ShapeInstance* outer, const KernelLibrary* library,
                int max_threads);
  // Phase one: fast kernels prepared, memory planned, branch instances made (shapes inferred).
  void prepare(const KernelLibrary* library, int max_threads);
  // Phase two: tensors bound and steps made (`outer`: the enclosing instance of a branch).
  void bind_tensors(const std::vector<const Tensor*>& inputs);
  void bind_slot(size_t i);  // a planned value's tensor, but for graph inputs
  void bind_branch(const std::vector<Tensor*>& if_outputs);
  void make_steps(const KernelLibrary* library, int max_threads);
  // The tensor of a value this instance's steps may read: its own slot, else an enclosing one's.
  Tensor* find_slot(const Value* v) const;
  // Whether v's bytes stay put for a whole run (a graph input, a weight, the arena, or a view of
  // those), so that a branch may view them instead of copying them.
  bool stable_bytes(const Value* v) const;

  void run_steps(int threads, StepTrace* trace);
  void run_reference(Step& st, int threads);
  void run_if(Step& st, int threads, StepTrace* trace);
  bool is_scratch_storage(const Tensor& t) const;

  const Model& model_;
  const Graph& graph_;
  const ShapeInstance* outer_ = nullptr;  // the enclosing instance (branch instances only)
  std::unordered_map<const Node*, Prepared> prepared_;                      // phase one -> two
  std::unordered_map<const Node*, std::array<std::unique_ptr<ShapeInstance>, 2>> branches_;  // phase one -> two
  std::vector<DType> in_dtypes_;
  std::vector<std::vector<int64_t>> in_dims_;
  plan::Plan plan_;
  std::shared_ptr<Buffer> arena_;
  std::vector<Tensor> slots_;                               // per plan value
  std::vector<std::shared_ptr<BorrowedBuffer>> borrowed_;  // per graph input
  std::vector<int> input_values_, output_values_;          // plan value per graph input / output
  std::vector<int> dynamic_values_;
  std::vector<Step> steps_;
  // A branch instance's results, per graph output: the tensor holding it after a run, and
  // whether that tensor is the If's own output (bound over it: nothing to copy).
  std::vector<const Tensor*> branch_outputs_;
  std::vector<bool> branch_output_bound_;
};

// With the model's shapes as they are (static): asks every node's fast kernel whether it takes the
// node (filling `prepared`) and plans memory with the workspace they ask for.
// `outer_view_ok`: planning a branch, which outer values it may view (plan::PlanOptions).
plan::Plan prepare_and_plan(const Model& model, const Graph& g, const KernelLibrary* library, int max_threads,
                            std::unordered_map<const Node*, ShapeInstance::Prepared>& prepared,
                            std::function<bool(const Value*)> outer_view_ok = nullptr);

// One run of `inst` with every step timed (src/runtime/profile_run.cpp; Executable::profile_run);
// rerun: StepTrace::rerun.
std::vector<StepTiming> timed_run(ShapeInstance& inst, const std::vector<const Tensor*>& inputs,
                                  std::vector<Tensor>& outputs, int threads, bool rerun = false);

}  // namespace kiln::runtime
