// `kiln profile --scaling` (profile_scaling.h).
#include "kiln/analysis/profile_scaling.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kiln/ir/error.h"

namespace kiln::analysis {

Scaling compare_scaling(const Profile& one, const Profile& n) {
  KILN_CHECK(one.kernels.size() == n.kernels.size(), "profile --scaling: ", one.kernels.size(), " kernels at 1 thread, ",
             n.kernels.size(), " at ", n.threads);
  Scaling s;
  s.threads = n.threads;
  s.plain_ms_one = one.plain_ms, s.plain_ms_n = n.plain_ms;
  s.speedup = n.plain_ms > 0 ? one.plain_ms / n.plain_ms : 0;
  for (size_t i = 0; i < n.kernels.size(); ++i) {
    const KernelProfile &a = one.kernels[i], &b = n.kernels[i];
    KILN_CHECK(a.name == b.name, "profile --scaling: kernel ", i, " is '", a.name, "' at 1 thread and '", b.name, "' at ",
               n.threads);
    KernelScaling k;
    k.name = b.name, k.op = b.op, k.tactic = b.tactic;
    k.ms_one = a.ms, k.ms_n = b.ms;
    k.speedup = b.ms > 0 ? a.ms / b.ms : 0;
    k.lost_ms = s.speedup > 0 ? b.ms - a.ms / s.speedup : 0;
    s.kernels.push_back(k);
  }
  return s;
}

namespace {

// A kernel is slower at N than at 1 by more than 2% and 1 us (below that, run-to-run noise: a
// 6 us global average measured 0.2 us apart).
bool slower(const KernelScaling& k) { return k.ms_n > k.ms_one * 1.02 && k.ms_n - k.ms_one > 1e-3; }

}  // namespace

std::string scaling_to_text(const Scaling& s, size_t top) {
  std::ostringstream o;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "\nscaling, 1 -> %d threads: a plain run %.3f -> %.3f ms (%.2fx); kernels by the time they lose "
                "against that speed-up:\n",
                s.threads, s.plain_ms_one, s.plain_ms_n, s.speedup);
  o << buf;
  std::snprintf(buf, sizeof buf, "  %-40s %-22s %-10s %9s %9s %8s %9s\n", "kernel", "op", "tactic", "ms@1",
                ("ms@" + std::to_string(s.threads)).c_str(), "speed-up", "lost ms");
  o << buf;
  std::vector<const KernelScaling*> v;
  for (const auto& k : s.kernels) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(), [](const auto* a, const auto* b) { return a->lost_ms > b->lost_ms; });
  for (size_t i = 0; i < v.size() && i < top && v[i]->lost_ms > 0; ++i) {
    const KernelScaling& k = *v[i];
    std::snprintf(buf, sizeof buf, "  %-40.40s %-22.22s %-10.10s %9.4f %9.4f %7.2fx %9.4f\n", k.name.c_str(), k.op.c_str(),
                  k.tactic.empty() ? "-" : k.tactic.c_str(), k.ms_one, k.ms_n, k.speedup, k.lost_ms);
    o << buf;
  }
  double lost = 0, slower_ms = 0;
  std::vector<const KernelScaling*> worse;
  for (const auto& k : s.kernels) {
    if (k.lost_ms > 0) lost += k.lost_ms;
    if (slower(k)) worse.push_back(&k), slower_ms += k.ms_n - k.ms_one;
  }
  std::snprintf(buf, sizeof buf, "  lost in all: %.3f ms of %.3f\n", lost, s.plain_ms_n);
  o << buf;
  if (worse.empty()) {
    o << "  no kernel is slower on " << s.threads << " threads than on 1\n";
  } else {
    std::snprintf(buf, sizeof buf, "  slower on %d threads than on 1: %zu kernels, %.4f ms more in all:", s.threads,
                  worse.size(), slower_ms);
    o << buf;
    for (size_t i = 0; i < worse.size() && i < top; ++i) o << (i ? ", " : " ") << worse[i]->name;
    if (worse.size() > top) o << ", +" << worse.size() - top;
    o << "\n";
  }
  return o.str();
}

json::Value scaling_json(const Scaling& s) {
  json::Value j;
  j.set("threads", s.threads);
  j.set("plain_ms_one_thread", s.plain_ms_one);
  j.set("plain_ms", s.plain_ms_n);
  j.set("speedup", s.speedup);
  json::Value& ks = j.set("kernels", json::Array{});
  json::Value& worse = j.set("slower_kernels", json::Array{});
  for (const auto& k : s.kernels) {
    json::Value& e = ks.push(json::Object{});
    e.set("name", k.name);
    e.set("op", k.op);
    e.set("tactic", k.tactic);
    e.set("ms_one_thread", k.ms_one);
    e.set("ms", k.ms_n);
    e.set("speedup", k.speedup);
    e.set("lost_ms", k.lost_ms);
    if (slower(k)) worse.push(k.name);
  }
  return j;
}

}  // namespace kiln::analysis
