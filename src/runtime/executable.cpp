// Executable::load and the compiled runtime's run loop: artifact in, plans cached per input shape.
#include "kiln/runtime/executable.h"

#include <algorithm>
#include <mutex>

#include "kiln/kernels/parallel.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/kernel_library.h"
#include "shape_instance.h"

namespace kiln {
namespace {

using runtime::KernelLibrary;
using runtime::ShapeInstance;

// Plans kept per Executable; a model fed ever-new shapes (a growing KV cache) drops the least
// recently used instead of growing without bound.
constexpr size_t kMaxCachedPlans = 8;

DimRanges ranges_from_manifest(const ArtifactManifest& m, const std::string& path) {
  DimRanges r;
  for (const auto& [name, text] : m.dims) {
    auto parse = [&](const std::string& s) {
      KILN_CHECK(!s.empty() && s.find_first_not_of("0123456789") == std::string::npos, path,
                 ": manifest.json: dim ", name, " = '", text, "' is not N or LO..HI");
      return std::stoll(s);
    };
    size_t dots = text.find("..");
    if (dots == std::string::npos) r[name] = DimRange{parse(text), parse(text)};
    else r[name] = DimRange{parse(text.substr(0, dots)), parse(text.substr(dots + 2))};
  }
  return r;
}

class CompiledExecutable final : public Executable {
 public:
  CompiledExecutable(LoadedArtifact a, const std::string& path) : art_(std::move(a)) {
    try {
      ops::verify_model(art_.model);
      ops::infer_shapes(art_.model);
    } catch (const Error& e) {
      throw Error(str_cat(path, ": graph.kir: ", e.what()));
    }
    if (!art_.kernel_library.empty()) library_ = KernelLibrary::load(art_.kernel_library, path + ": kernels.so");
    // Generated kernels are resolved now, so a library that lacks one fails at load, not mid-run.
    for (const auto& n : art_.model.graph->nodes()) {
      std::string symbol = n->attr_s("kernel", "");
      if (n->domain != "kiln" || symbol.empty()) continue;
      KILN_CHECK(library_ != nullptr, path, ": ", n->describe(), " calls generated kernel '", symbol,
                 "' but the artifact has no kernels.so");
      library_->symbol(symbol);
    }
    ranges_ = ranges_from_manifest(art_.manifest, path);
    const Graph& g = *art_.model.graph;
    resolved_.resize(g.inputs.size());
  }

  const ArtifactManifest& manifest() const override { return art_.manifest; }
  const Model& model() const override { return art_.model; }

  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs, const RunOptions& opt) override {
    const Graph& g = *art_.model.graph;
    for (const auto& [name, t] : inputs) {
      bool known = std::any_of(g.inputs.begin(), g.inputs.end(), [&](const Value* v) { return v->name == name; });
      KILN_CHECK(known, "model has no input named '", name, "'");
    }
    std::vector<Tensor> ordered(g.inputs.size());
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      auto it = inputs.find(g.inputs[k]->name);
      if (it != inputs.end()) ordered[k] = it->second;
    }
    std::vector<Tensor> outs;
    run(ordered, outs, opt);
    std::map<std::string, Tensor> result;
    for (size_t j = 0; j < g.outputs.size(); ++j) result[g.outputs[j]->name] = outs[j];
    return result;
  }

  void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, const RunOptions& opt) override {
    std::lock_guard<std::mutex> lk(mu_);  // one run at a time: the arena is shared
    int threads = 0;
    ShapeInstance* inst = begin_run(inputs, opt, threads);
    inst->run(resolved_, outputs, threads);
  }

  std::vector<StepTiming> profile_run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                                      const RunOptions& opt, bool rerun) override {
    std::lock_guard<std::mutex> lk(mu_);
    int threads = 0;
    ShapeInstance* inst = begin_run(inputs, opt, threads);
    return runtime::timed_run(*inst, resolved_, outputs, threads, rerun);
  }

  size_t cached_plans() const override { return instances_.size(); }
  const plan::Plan* last_plan() const override { return last_ ? &last_->plan() : nullptr; }

 private:
  // Resolves the inputs into resolved_, finds (or plans) their shape instance and sets the
  // thread count: everything a run does before its steps.
  ShapeInstance* begin_run(const std::vector<Tensor>& inputs, const RunOptions& opt, int& threads) {
    const Graph& g = *art_.model.graph;
    KILN_CHECK(inputs.size() == g.inputs.size(), "model takes ", g.inputs.size(), " inputs, got ", inputs.size());
    for (size_t k = 0; k < inputs.size(); ++k) {
      const Value* v = g.inputs[k];
      if (inputs[k].defined()) {
        resolved_[k] = &inputs[k];
      } else {
        KILN_CHECK(v->initializer.has_value(), "missing input '", v->name, "' (", dtype_name(v->dtype),
                   v->shape.str(), ")");
        resolved_[k] = &*v->initializer;  // an input with a default
      }
    }
    ShapeInstance* inst = instance_for(resolved_);
    inst->last_used = ++clock_;
    last_ = inst;
    threads = opt.threads > 0                ? opt.threads
              : art_.manifest.threads > 0 ? static_cast<int>(art_.manifest.threads)
                                          : kernels::hardware_threads();
    kernels::set_default_threads(threads);
    return inst;
  }

  ShapeInstance* instance_for(const std::vector<const Tensor*>& inputs) {
    if (last_ && last_->matches(inputs)) return last_;
    for (auto& i : instances_)
      if (i->matches(inputs)) return i.get();
    // First sight of this shape: check it like run_model does, then plan it.
    const Graph& g = *art_.model.graph;
    DimBindings bound;
    for (size_t k = 0; k < inputs.size(); ++k) check_input(*g.inputs[k], *inputs[k], bound, ranges_);
    const int max_threads = std::max({kernels::hardware_threads(), static_cast<int>(art_.manifest.threads), 1});
    auto inst = std::make_unique<ShapeInstance>(art_.model, library_.get(), inputs, bound, max_threads);
    if (instances_.size() >= kMaxCachedPlans) {
      auto lru = std::min_element(instances_.begin(), instances_.end(),
                                  [](const auto& a, const auto& b) { return a->last_used < b->last_used; });
      if (last_ == lru->get()) last_ = nullptr;
      instances_.erase(lru);
    }
    instances_.push_back(std::move(inst));
    return instances_.back().get();
  }

  LoadedArtifact art_;
  std::unique_ptr<KernelLibrary> library_;
  DimRanges ranges_;
  std::vector<std::unique_ptr<ShapeInstance>> instances_;
  ShapeInstance* last_ = nullptr;
  uint64_t clock_ = 0;
  std::vector<const Tensor*> resolved_;  // inputs of the current run, reused to avoid allocation
  std::mutex mu_;
};

}  // namespace

plan::Plan runtime_plan(const Model& m) {
  std::unordered_map<const Node*, ShapeInstance::Prepared> prepared;
  return runtime::prepare_and_plan(m, *m.graph, nullptr, kernels::hardware_threads(), prepared);
}

namespace {

// The branches of g's Ifs, planned as ShapeInstance plans them: outer values whose bytes stay put
// in the enclosing plans (runtime::bytes_stay_put) may be viewed.
void plan_branches(const Model& m, const Graph& g, std::vector<const plan::Plan*>& enclosing,
                   std::vector<BranchPlan>& out) {
  auto stable = [&enclosing](const Value* v) {
    for (auto it = enclosing.rbegin(); it != enclosing.rend(); ++it) {
      const int i = (*it)->index_of(v);
      if (i < 0) continue;
      return runtime::bytes_stay_put((*it)->values[i].kind);
    }
    return false;
  };
  for (const auto& n : g.nodes()) {
    const std::vector<Graph*> branches = ops::compiled_branches(*n);
    for (size_t b = 0; b < branches.size(); ++b) {
      std::unordered_map<const Node*, ShapeInstance::Prepared> prepared;
      auto p = std::make_unique<plan::Plan>(
          runtime::prepare_and_plan(m, *branches[b], nullptr, kernels::hardware_threads(), prepared, stable));
      enclosing.push_back(p.get());
      plan_branches(m, *branches[b], enclosing, out);
      enclosing.pop_back();
      out.push_back({n->name + (b == 0 ? ".then_branch" : ".else_branch"), std::move(*p)});
    }
  }
}

}  // namespace

std::vector<BranchPlan> runtime_branch_plans(const Model& m) {
  plan::Plan main = runtime_plan(m);
  std::vector<const plan::Plan*> enclosing = {&main};
  std::vector<BranchPlan> out;
  plan_branches(m, *m.graph, enclosing, out);
  return out;
}

std::unique_ptr<Executable> Executable::load(const std::string& path) {
  return std::make_unique<CompiledExecutable>(read_artifact(path, true, weight_memory_to_run()), path);
}

}  // namespace kiln
