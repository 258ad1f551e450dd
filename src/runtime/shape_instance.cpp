// Building and running one input shape of a compiled model (shape_instance.h).
#include "shape_instance.h"

#include <chrono>
#include <cstring>
#include <tuple>

#include "fetch_ahead.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::runtime {
namespace {

// Saves the dtype and shape of every value (subgraphs included) and puts them back on scope
// exit: shape inference for one input shape works on the loaded model in place, which must
// keep its declared (symbolic) shapes for the next shape.
class ShapeSnapshot {
 public:
  explicit ShapeSnapshot(Graph& g) { save(g); }
  ~ShapeSnapshot() {
    for (auto& [v, dt, sh] : saved_) {
      v->dtype = dt;
      v->shape = std::move(sh);
    }
  }

 private:
  void save(Graph& g) {
    for (const auto& v : g.values()) saved_.emplace_back(v.get(), v->dtype, v->shape);
    for (const auto& n : g.nodes())
      for (Graph* sg : n->subgraphs()) save(*sg);
  }
  std::vector<std::tuple<Value*, DType, Shape>> saved_;
};

// Reference kernels that write every element of their outputs: their planned outputs need not be
// zero-filled before each run (the others may accumulate into fresh, zeroed memory). Elementwise
// ops (MemoryEffect::InPlace) qualify; so do these copies (ops/tensor/concat_split.cpp,
// gather.cpp, layout.cpp).
bool writes_every_element(const Node& n) {
  if (plan::memory_effect(n.domain, n.op) == plan::MemoryEffect::InPlace) return true;
  if (!n.domain.empty()) return false;
  for (const char* op : {"Concat", "Gather", "Slice", "Split", "Transpose"})
    if (n.op == op) return true;
  return false;
}

size_t byte_offset(const Tensor& t) {
  return static_cast<size_t>(static_cast<const char*>(t.raw()) - static_cast<const char*>(t.storage()->data()));
}

}  // namespace

plan::Plan prepare_and_plan(const Model& model, const Graph& g, const KernelLibrary* library, int max_threads,
                            std::unordered_map<const Node*, ShapeInstance::Prepared>& prepared,
                            std::function<bool(const Value*)> outer_view_ok) {
  for (const auto& np : g.nodes()) {
    std::vector<const FastKernel*> candidates = find_fast_kernels(np->domain, np->op);
    if (candidates.empty()) continue;
    bool outputs_static = true;
    for (const Value* o : np->outputs) outputs_static &= !o || (o->shape.is_static() && o->dtype != DType::undefined);
    if (!outputs_static) continue;
    // The first candidate whose prepare accepts the node runs it (e.g. MaxPool: int8, then f32).
    for (const FastKernel* fk : candidates) {
      ShapeInstance::Prepared p;
      p.kernel = fk;
      p.ctx.node = np.get();
      p.ctx.opset = model.opset("");
      p.ctx.library = library;
      p.ctx.threads = p.ctx.max_threads = max_threads;
      if (!fk->prepare || fk->prepare(p.ctx)) {
        prepared.emplace(np.get(), std::move(p));
        break;
      }
    }
  }
  plan::PlanOptions po;
  po.scratch_bytes = [&prepared](const Node& n) -> int64_t {
    auto it = prepared.find(&n);
    return it == prepared.end() ? 0 : it->second.ctx.workspace_bytes;
  };
  po.outer_view_ok = std::move(outer_view_ok);
  po.stored_bytes = [](const Value* v) { return ops::padded_planes_bytes(*v); };
  return plan::plan_memory(g, po);
}

ShapeInstance::ShapeInstance(Model& model, const KernelLibrary* library, const std::vector<const Tensor*>& inputs,
                             const DimBindings& bindings, int max_threads)
    : model_(model), graph_(*model.graph) {
  Graph& g = *model.graph;
  for (const Tensor* t : inputs) {
    in_dtypes_.push_back(t->dtype());
    in_dims_.push_back(t->dims());
  }
  {
    ShapeSnapshot snapshot(g);
    for (size_t i = 0; i < g.inputs.size(); ++i) g.inputs[i]->shape = Shape::of(inputs[i]->dims());
    ops::infer_shapes(model, bindings);
    prepare(library, max_threads);
  }
  bind_tensors(inputs);
  make_steps(library, max_threads);
}

ShapeInstance::~ShapeInstance() = default;

void ShapeInstance::bind_slot(size_t i) {
  const plan::ValuePlan& vp = plan_.values[i];
  switch (vp.kind) {
    case plan::ValueKind::Input: break;  // the caller's (bind_tensors)
    case plan::ValueKind::Weight: slots_[i] = *vp.value->initializer; break;
    case plan::ValueKind::Arena: slots_[i] = Tensor(vp.dtype, vp.dims, arena_, static_cast<size_t>(vp.offset)); break;
    case plan::ValueKind::View: {  // of a value of this plan, or (a branch) of an outer one
      const Tensor& base = *find_slot(vp.value->producer->inputs[0]);
      slots_[i] = Tensor(vp.dtype, vp.dims, base.storage(), byte_offset(base));
      break;
    }
    case plan::ValueKind::Dynamic: dynamic_values_.push_back(static_cast<int>(i)); break;
    case plan::ValueKind::Output: slots_[i] = Tensor(vp.dtype, vp.dims); break;
  }
}

void ShapeInstance::bind_tensors(const std::vector<const Tensor*>& inputs) {
  const Graph& g = graph_;
  arena_ = make_large_buffer(static_cast<size_t>(plan_.arena_bytes));
  slots_.resize(plan_.values.size());
  std::unordered_map<const Value*, size_t> input_pos;
  for (size_t k = 0; k < g.inputs.size(); ++k) input_pos[g.inputs[k]] = k;
  borrowed_.resize(g.inputs.size());
  for (size_t i = 0; i < plan_.values.size(); ++i) {
    const plan::ValuePlan& vp = plan_.values[i];
    if (vp.kind == plan::ValueKind::Input) {
      size_t k = input_pos.at(vp.value);
      const Tensor& t = *inputs[k];
      borrowed_[k] = std::make_shared<BorrowedBuffer>(const_cast<void*>(t.raw()), t.nbytes());
      slots_[i] = Tensor(t.dtype(), t.dims(), borrowed_[k], 0);
    }
    bind_slot(i);
  }
  for (const Value* v : g.inputs) input_values_.push_back(plan_.index_of(v));
  for (const Value* v : g.outputs) {
    int i = plan_.index_of(v);
    KILN_CHECK(i >= 0, "graph output '", v->name, "' is not computed by the graph");
    output_values_.push_back(i);
  }
}

void ShapeInstance::make_steps(const KernelLibrary* library, int max_threads) {
  for (const plan::StepPlan& sp : plan_.steps) {
    const Node& n = *sp.node;
    bool all_views = !n.outputs.empty();
    for (const Value* o : n.outputs)
      all_views &= o != nullptr && plan_.values[plan_.index_of(o)].kind == plan::ValueKind::View;
    if (all_views) continue;  // the plan made its output a view: nothing to compute
    Step st;
    auto it = prepared_.find(&n);
    if (it != prepared_.end()) {
      st.fast = it->second.kernel;
      st.ctx = std::move(it->second.ctx);
    } else {
      st.def = ops::find_op(n.domain, n.op);
      KILN_CHECK(st.def && st.def->kernel, n.describe(), ": op '", n.op, "' has no kernel");
      st.ctx.node = &n;
      st.ctx.opset = model_.opset("");
      st.ctx.library = library;
      st.ctx.max_threads = max_threads;
    }
    for (const Value* v : n.inputs) {
      Tensor* t = v ? find_slot(v) : nullptr;
      KILN_CHECK(!v || t, n.describe(), ": input '", v->name, "' is not in the plan");
      st.ctx.inputs.push_back(t);
    }
    for (const Value* o : n.outputs) {
      int i = o ? plan_.index_of(o) : -1;
      st.out_values.push_back(i);
      st.ctx.outputs.push_back(o ? &slots_[i] : nullptr);
      st.keep_contents.push_back(o && (plan_.values[i].in_place || writes_every_element(n)));
    }
    if (sp.scratch_bytes > 0) {
      st.ctx.workspace = static_cast<char*>(arena_->data()) + sp.scratch_offset;
      st.ctx.workspace_bytes = sp.scratch_bytes;
    }
    st.has_subgraphs = !n.subgraphs().empty();
    if (auto b = branches_.find(&n); b != branches_.end()) {
      st.branch = std::move(b->second);
      // A branch writes an If output in the arena directly; the others are copied after it runs.
      std::vector<Tensor*> direct;
      for (size_t k = 0; k < st.out_values.size(); ++k) {
        const int vi = st.out_values[k];
        direct.push_back(vi >= 0 && plan_.values[vi].kind == plan::ValueKind::Arena ? st.ctx.outputs[k] : nullptr);
      }
      for (auto& br : st.branch) {
        br->bind_branch(direct);
        br->make_steps(library, max_threads);
      }
    }
    steps_.push_back(std::move(st));
  }
  std::vector<FetchAheadStep> fetch;
  for (Step& st : steps_) fetch.push_back({st.fast, &st.ctx});
  assign_fetch_ahead(fetch);
  prepared_.clear();
  branches_.clear();
}

bool ShapeInstance::stable_bytes(const Value* v) const {
  const int i = plan_.index_of(v);
  if (i < 0) return outer_ && outer_->stable_bytes(v);
  return bytes_stay_put(plan_.values[i].kind);
}

Tensor* ShapeInstance::find_slot(const Value* v) const {
  const int i = plan_.index_of(v);
  if (i >= 0) return const_cast<Tensor*>(&slots_[i]);
  return outer_ ? outer_->find_slot(v) : nullptr;
}

bool ShapeInstance::matches(const std::vector<const Tensor*>& inputs) const {
  if (inputs.size() != in_dims_.size()) return false;
  for (size_t k = 0; k < inputs.size(); ++k)
    if (inputs[k]->dtype() != in_dtypes_[k] || inputs[k]->dims() != in_dims_[k]) return false;
  return true;
}

bool ShapeInstance::is_scratch_storage(const Tensor& t) const {
  if (t.storage() == arena_) return true;
  for (const auto& b : borrowed_)
    if (b && t.storage() == b) return true;
  return outer_ && outer_->is_scratch_storage(t);  // a branch's value may view an enclosing arena
}

void ShapeInstance::run_reference(Step& st, int threads) {
  const Node& n = *st.ctx.node;
  // A lowered node whose fast kernel could not be planned: its shapes depend on values seen only
  // at run time (a branch whose shapes inference could not settle, a data-dependent Reshape), and
  // its packed weights mean nothing to the reference kernel.
  KILN_CHECK(!n.has_attr("packed"), n.describe(), ": its input's shape (declared ",
             n.inputs.empty() || !n.inputs[0] ? std::string("?") : n.inputs[0]->shape.str(),
             ") depends on values seen only at run time, and its packed weights run only on the fast kernel, "
             "which is planned by shape; fix the shapes with --shape or --dim when compiling");
  ops::KernelContext::SubgraphRunner runner;
  if (st.has_subgraphs) {
    runner = [this, threads](const Graph& sg, const std::vector<Tensor>& sin) {
      ValueLookup outer = [this](const Value* v) -> const Tensor* {
        const Tensor* t = find_slot(v);
        return t && t->defined() ? t : nullptr;
      };
      return run_subgraph(model_, sg, sin, outer, threads);
    };
  }
  ops::KernelContext kc(n, st.ctx.opset, st.ctx.inputs, std::move(runner), threads);
  for (size_t k = 0; k < st.out_values.size(); ++k) {
    int vi = st.out_values[k];
    if (vi >= 0 && plan_.values[vi].kind != plan::ValueKind::Dynamic)
      kc.use_preallocated(k, st.ctx.outputs[k], st.keep_contents[k]);
  }
  st.def->kernel(kc);
  for (size_t k = 0; k < st.out_values.size(); ++k) {
    int vi = st.out_values[k];
    if (vi < 0) continue;
    const plan::ValuePlan& vp = plan_.values[vi];
    Tensor& t = kc.outputs()[k];
    KILN_CHECK(t.defined(), n.describe(), ": kernel produced no value for output '", vp.name, "'");
    Tensor& slot = *st.ctx.outputs[k];
    if (vp.kind == plan::ValueKind::Dynamic) {
      KILN_CHECK(vp.dtype == DType::undefined || vp.dtype == t.dtype(), n.describe(), ": kernel produced ",
                 dtype_name(t.dtype()), " for output '", vp.name, "', declared ", dtype_name(vp.dtype));
      // Bytes in the arena (or the caller's input) may be reused while this value still lives.
      slot = is_scratch_storage(t) ? t.clone() : std::move(t);
      continue;
    }
    if (t.raw() == slot.raw() && t.dims() == slot.dims()) continue;  // written in place
    KILN_CHECK(t.dtype() == slot.dtype() && t.dims() == slot.dims(), n.describe(), ": kernel produced ",
               dtype_name(t.dtype()), dims_str(t.dims()), " for output '", vp.name, "', the plan has ",
               dtype_name(slot.dtype()), dims_str(slot.dims()));
    if (slot.nbytes() != 0) std::memmove(slot.raw(), t.raw(), slot.nbytes());
  }
}

namespace {

// Whether any output of the step shares bytes with one of its inputs (a layer planned in place,
// a residual added into its own output): running it again would read what it wrote.
bool writes_what_it_reads(const StepContext& ctx) {
  for (const Tensor* out : ctx.outputs) {
    if (!out || !out->defined() || out->nbytes() == 0) continue;
    const auto* o0 = static_cast<const char*>(out->raw());
    const auto* o1 = o0 + out->nbytes();
    for (const Tensor* in : ctx.inputs) {
      if (!in || !in->defined() || in->nbytes() == 0) continue;
      const auto* i0 = static_cast<const char*>(in->raw());
      if (i0 < o1 && o0 < i0 + in->nbytes()) return true;
    }
  }
  return false;
}

}  // namespace

void ShapeInstance::run_steps(int threads, StepTrace* trace) {
  for (Step& st : steps_) {
    if (st.branch[0]) {
      run_if(st, threads, trace);
    } else if (st.fast) {
      st.ctx.threads = std::min(threads, st.ctx.max_threads);
      st.fast->run(st.ctx);
    } else {
      st.ctx.threads = threads;
      run_reference(st, threads);
    }
    if (trace) {
      using Clock = std::chrono::steady_clock;
      const Clock::time_point end = Clock::now();
      StepTrace::Entry e{st.ctx.node, st.fast != nullptr || st.branch[0] != nullptr,
                         std::chrono::duration<double, std::milli>(end - trace->start).count()};
      e.resume_ms = e.end_ms;
      if (st.ctx.warm && fetch_ahead_on()) e.fetch_ahead_bytes = st.ctx.warm_bytes, e.fetch_ahead_for = st.ctx.warm_for;
      if (kernels::pool_stats_on()) {
        // Taken off the clock: the next step's time starts after it.
        e.has_pool = true;
        e.pool = kernels::take_pool_stats();
        e.resume_ms = std::chrono::duration<double, std::milli>(Clock::now() - trace->start).count();
      }
      if (trace->rerun && st.fast && !st.branch[0] && !writes_what_it_reads(st.ctx)) {
        st.fast->run(st.ctx);  // the same outputs again, its data now where the first call left it
        const Clock::time_point again = Clock::now();
        e.again_ms = std::chrono::duration<double, std::milli>(again - end).count();
        if (e.has_pool) (void)kernels::take_pool_stats();  // the second call's: not the step's
        e.resume_ms = std::chrono::duration<double, std::milli>(again - trace->start).count();
      }
      trace->entries.push_back(e);
    }
  }
}

void ShapeInstance::run(const std::vector<const Tensor*>& inputs, std::vector<Tensor>& outputs, int threads,
                        StepTrace* trace) {
  if (trace) trace->start = std::chrono::steady_clock::now();
  // The kernels run back to back: keep the pool's workers spinning between them.
  const kernels::SpinningScope spinning;
  // Whether the cores are far apart this minute (the write fetches and output claims pay only then).
  kernels::refresh_core_distance(threads);
  for (size_t k = 0; k < borrowed_.size(); ++k)
    if (borrowed_[k]) borrowed_[k]->set(const_cast<void*>(inputs[k]->raw()));
  // An output buffer still held by the caller (other than through `outputs` itself, which is
  // being overwritten) is left to them; this run gets a fresh one.
  for (size_t j = 0; j < output_values_.size(); ++j) {
    const plan::ValuePlan& vp = plan_.values[output_values_[j]];
    if (vp.kind != plan::ValueKind::Output) continue;
    Tensor& slot = slots_[output_values_[j]];
    long refs = slot.storage().use_count();
    if (j < outputs.size() && outputs[j].defined() && outputs[j].storage() == slot.storage()) --refs;
    if (refs > 1) slot = Tensor(vp.dtype, vp.dims);
  }
  run_steps(threads, trace);
  outputs.resize(output_values_.size());
  const Graph& g = graph_;
  for (size_t j = 0; j < output_values_.size(); ++j) {
    const int vi = output_values_[j];
    const plan::ValuePlan& vp = plan_.values[vi];
    if (vp.kind == plan::ValueKind::Input) {
      for (size_t k = 0; k < g.inputs.size(); ++k)
        if (g.inputs[k] == vp.value) outputs[j] = *inputs[k];
    } else if (vp.kind == plan::ValueKind::Dynamic && is_scratch_storage(slots_[vi])) {
      outputs[j] = slots_[vi].clone();
    } else {
      outputs[j] = slots_[vi];
    }
  }
  // Values of run-time shape are made anew by every run; do not hold them in between.
  for (int vi : dynamic_values_) slots_[vi] = Tensor();
}

}  // namespace kiln::runtime
