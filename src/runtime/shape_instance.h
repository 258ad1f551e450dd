// One input shape of a compiled model, ready to run: its memory plan, the arena, a tensor for
// every planned value (bound once) and the steps. Running it is a loop over the steps.
#pragma once
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "kiln/ops/op.h"
#include "kiln/plan/plan.h"
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

class ShapeInstance {
 public:
  // Infers shapes for these inputs on `model` (restored afterwards), prepares fast kernels,
  // plans memory and binds every tensor. `inputs` are in graph-input order, none missing.
  ShapeInstance(Model& model, const KernelLibrary* library, const std::vector<const Tensor*>& inputs,
                const DimBindings& bindings, int max_threads);

  // Same dtypes and dims as the inputs this instance was made for (allocation-free).
  bool matches(const std::vector<const Tensor*>& inputs) const;
  // Runs the steps; outputs in graph-output order (see Executable::run for buffer reuse). With
  // `step_ms`, adds each step's wall time in ms to it (sized to steps() on first use).
  void run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, int threads,
           std::vector<double>* step_ms = nullptr);
  // The node of each step, in execution order (views the plan made are not steps).
  std::vector<const Node*> step_nodes() const;
  bool step_is_fast(size_t i) const { return steps_[i].fast != nullptr; }

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
  };

  void bind_tensors(const std::vector<const Tensor*>& inputs);
  void make_steps(std::unordered_map<const Node*, Prepared>& prepared, const KernelLibrary* library, int max_threads);
  void run_step(Step& st, int threads);
  void run_reference(Step& st, int threads);
  bool is_scratch_storage(const Tensor& t) const;

  const Model& model_;
  std::vector<DType> in_dtypes_;
  std::vector<std::vector<int64_t>> in_dims_;
  plan::Plan plan_;
  std::shared_ptr<Buffer> arena_;
  std::vector<Tensor> slots_;                               // per plan value
  std::vector<std::shared_ptr<BorrowedBuffer>> borrowed_;  // per graph input
  std::vector<int> input_values_, output_values_;          // plan value per graph input / output
  std::vector<int> dynamic_values_;
  std::vector<Step> steps_;
};

// With the model's shapes as they are (static): asks every node's fast kernel whether it takes the
// node (filling `prepared`) and plans memory with the workspace they ask for.
plan::Plan prepare_and_plan(const Model& model, const KernelLibrary* library, int max_threads,
                            std::unordered_map<const Node*, ShapeInstance::Prepared>& prepared);

}  // namespace kiln::runtime
