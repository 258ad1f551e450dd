// `kiln profile --rerun` (profile_rerun.h).
#include "kiln/analysis/profile_rerun.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kiln/ir/error.h"

namespace kiln::analysis {

Rerun profile_rerun(Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt) {
  const std::vector<std::vector<StepTiming>> runs =
      extra_profiled_runs(exe, inputs, opt, "--rerun", [&](std::vector<Tensor>& outputs, const RunOptions& ro) {
        return exe.profile_run(inputs, outputs, ro, true);
      });
  Rerun out;
  out.threads = opt.threads, out.runs = opt.runs;
  const std::vector<StepTiming>& steps = runs.front();
  for (size_t s = 0; s < steps.size(); ++s) {
    KernelRerun k;
    k.name = steps[s].node, k.op = steps[s].op, k.tactic = steps[s].tactic;
    std::vector<double> first, again;
    bool every_run = true;
    for (const auto& run : runs) {
      KILN_CHECK(s < run.size() && run[s].node == k.name, "profile --rerun: the runs' steps differ at step ", s);
      first.push_back(run[s].ms);
      if (run[s].again_ms >= 0) again.push_back(run[s].again_ms);
      else every_run = false;
    }
    k.ms = median(first);
    if (every_run) {
      k.again_ms = median(again);
      k.cold_ms = k.ms - k.again_ms;
      out.ms += k.ms, out.again_ms += k.again_ms, out.cold_ms += k.cold_ms;
    } else {
      ++out.not_rerun, out.not_rerun_ms += k.ms;
    }
    out.kernels.push_back(std::move(k));
  }
  return out;
}

std::string rerun_to_text(const Rerun& r, size_t top) {
  std::ostringstream o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\ndata movement (--rerun, %d threads, median of %d runs): each kernel run a second time right "
                "after itself, its data where the first call left it; cold ms = first - second, what reaching "
                "its inputs, weights and output lines cost the first time:\n",
                r.threads, r.runs);
  o << buf;
  std::snprintf(buf, sizeof buf, "  %-40s %-22s %-10s %9s %9s %9s %6s\n", "kernel", "op", "tactic", "ms", "again ms",
                "cold ms", "cold");
  o << buf;
  std::vector<const KernelRerun*> v;
  for (const auto& k : r.kernels)
    if (k.again_ms >= 0) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) { return a->cold_ms > b->cold_ms; });
  for (size_t i = 0; i < v.size() && i < top && v[i]->cold_ms > 0; ++i) {
    const KernelRerun& k = *v[i];
    std::snprintf(buf, sizeof buf, "  %-40.40s %-22.22s %-10.10s %9.4f %9.4f %9.4f %5.0f%%\n", k.name.c_str(),
                  k.op.c_str(), k.tactic.empty() ? "-" : k.tactic.c_str(), k.ms, k.again_ms, k.cold_ms,
                  k.ms > 0 ? 100 * k.cold_ms / k.ms : 0.0);
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "  %zu kernels run again: %.3f ms, again %.3f ms: %.3f ms (%.0f%%) reaching data\n",
                v.size(), r.ms, r.again_ms, r.cold_ms, r.ms > 0 ? 100 * r.cold_ms / r.ms : 0.0);
  o << buf;
  if (r.not_rerun > 0) {
    std::snprintf(buf, sizeof buf,
                  "  not run again (they write what they read, or are an If or a reference kernel): %zu kernels, "
                  "%.3f ms:",
                  r.not_rerun, r.not_rerun_ms);
    o << buf;
    size_t listed = 0;
    for (const auto& k : r.kernels)
      if (k.again_ms < 0 && listed++ < top) o << (listed > 1 ? ", " : " ") << k.name;
    if (r.not_rerun > top) o << ", +" << r.not_rerun - top;
    o << "\n";
  }
  return o.str();
}

json::Value rerun_json(const Rerun& r) {
  json::Value j;
  j.set("threads", r.threads);
  j.set("runs", r.runs);
  j.set("ms", r.ms);
  j.set("again_ms", r.again_ms);
  j.set("cold_ms", r.cold_ms);
  j.set("not_rerun_ms", r.not_rerun_ms);
  json::Value& ks = j.set("kernels", json::Array{});
  json::Value& skipped = j.set("not_rerun", json::Array{});
  for (const auto& k : r.kernels) {
    if (k.again_ms < 0) {
      skipped.push(k.name);
      continue;
    }
    json::Value& e = ks.push(json::Object{});
    e.set("name", k.name);
    e.set("op", k.op);
    e.set("tactic", k.tactic);
    e.set("ms", k.ms);
    e.set("again_ms", k.again_ms);
    e.set("cold_ms", k.cold_ms);
  }
  return j;
}

}  // namespace kiln::analysis
