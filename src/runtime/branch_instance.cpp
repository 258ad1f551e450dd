// Compiled control flow: an If's branches as instances of their own (shape_instance.h).
//
// Both branches are planned with the enclosing instance, from the same shape inference: a branch
// whose shapes inference could not settle (Silero VAD's 8 kHz branch at a 16 kHz input's shapes)
// plans its values as Dynamic and runs them on the reference kernels, as the interpreter would,
// failing the same way if it is ever taken.
#include <cstring>

#include "shape_instance.h"

namespace kiln::runtime {

ShapeInstance::ShapeInstance(const Model& model, const Graph& g, const ShapeInstance* outer,
                             const KernelLibrary* library, int max_threads)
    : model_(model), graph_(g), outer_(outer) {
  prepare(library, max_threads);
}

void ShapeInstance::prepare(const KernelLibrary* library, int max_threads) {
  std::function<bool(const Value*)> outer_view_ok;
  if (outer_) outer_view_ok = [this](const Value* v) { return outer_->stable_bytes(v); };
  plan_ = prepare_and_plan(model_, graph_, library, max_threads, prepared_, std::move(outer_view_ok));
  for (const auto& np : graph_.nodes()) {
    const std::vector<Graph*> branches = ops::compiled_branches(*np);
    if (branches.empty()) continue;
    auto& b = branches_[np.get()];
    b[0].reset(new ShapeInstance(model_, *branches[0], this, library, max_threads));
    b[1].reset(new ShapeInstance(model_, *branches[1], this, library, max_threads));
  }
}

void ShapeInstance::bind_branch(const std::vector<Tensor*>& if_outputs) {
  arena_ = make_large_buffer(static_cast<size_t>(plan_.arena_bytes));
  slots_.resize(plan_.values.size());
  for (size_t i = 0; i < plan_.values.size(); ++i) {
    KILN_CHECK(plan_.values[i].kind != plan::ValueKind::Input, "branch '", graph_.name, "' has an input '",
               plan_.values[i].name, "'");
    bind_slot(i);
  }
  // Outputs the branch computes itself go straight into the If's arena tensor when it has the
  // same dtype and dims (each tensor once: a value returned twice is copied the second time).
  branch_outputs_.assign(graph_.outputs.size(), nullptr);
  branch_output_bound_.assign(graph_.outputs.size(), false);
  std::vector<bool> taken(plan_.values.size(), false);
  for (size_t j = 0; j < graph_.outputs.size(); ++j) {
    const Value* v = graph_.outputs[j];
    const int i = plan_.index_of(v);
    Tensor* dst = j < if_outputs.size() ? if_outputs[j] : nullptr;
    if (i >= 0 && dst && !taken[i] && plan_.values[i].kind == plan::ValueKind::Output &&
        plan_.values[i].dtype == dst->dtype() && plan_.values[i].dims == dst->dims()) {
      slots_[i] = *dst;
      taken[i] = true;
      branch_output_bound_[j] = true;
    }
    branch_outputs_[j] = find_slot(v);
    KILN_CHECK(branch_outputs_[j] != nullptr, "branch '", graph_.name, "': output '", v->name,
               "' is not computed by the branch or an enclosing graph");
  }
}

void ShapeInstance::run_if(Step& st, int threads, StepTrace* trace) {
  const Node& n = *st.ctx.node;
  const Tensor& cond = *st.ctx.inputs[0];
  KILN_CHECK(cond.dtype() == DType::boolean && cond.numel() == 1, n.describe(), ": cond must be one bool, got ",
             dtype_name(cond.dtype()), dims_str(cond.dims()));
  const int which = cond.data<bool>()[0] ? 0 : 1;
  const char* branch_name = which == 0 ? "then_branch" : "else_branch";
  ShapeInstance& b = *st.branch[which];
  b.run_steps(threads, trace);
  for (size_t k = 0; k < st.out_values.size(); ++k) {
    const int vi = st.out_values[k];
    if (vi < 0 || b.branch_output_bound_[k]) continue;
    const Tensor& src = *b.branch_outputs_[k];
    Tensor& dst = *st.ctx.outputs[k];
    const plan::ValuePlan& vp = plan_.values[vi];
    KILN_CHECK(src.defined(), n.describe(), ": ", branch_name, " left output '",
               vp.name, "' undefined");
    if (vp.kind == plan::ValueKind::Dynamic) {
      dst = src.clone();  // the branch's bytes are reused by its next run
      continue;
    }
    KILN_CHECK(src.dtype() == dst.dtype() && src.dims() == dst.dims(), n.describe(), ": ", branch_name, " produced ",
               dtype_name(src.dtype()), dims_str(src.dims()), " for output '", vp.name, "', the plan has ",
               dtype_name(dst.dtype()), dims_str(dst.dims()));
    if (dst.nbytes() != 0) std::memcpy(dst.raw(), src.raw(), dst.nbytes());
  }
  // Values of run-time shape are made anew by every run; do not hold them in between.
  for (int vi : b.dynamic_values_) b.slots_[vi] = Tensor();
}

}  // namespace kiln::runtime
