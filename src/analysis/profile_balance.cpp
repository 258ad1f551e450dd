// `kiln profile --balance` (profile_balance.h).
#include "kiln/analysis/profile_balance.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"

namespace kiln::analysis {

namespace {

// Collection on for one profiled run, off again even when the run throws.
struct PoolStatsOn {
  PoolStatsOn() { kernels::set_pool_stats(true); }
  ~PoolStatsOn() { kernels::set_pool_stats(false); }
};

}  // namespace

Balance balance_from_runs(const std::vector<std::vector<StepTiming>>& runs, int threads) {
  KILN_CHECK(!runs.empty(), "profile --balance: no runs");
  KILN_CHECK(threads >= 1, "profile --balance: threads must be at least 1");
  Balance out;
  out.threads = threads, out.runs = static_cast<int>(runs.size());
  const std::vector<StepTiming>& steps = runs.front();
  for (size_t s = 0; s < steps.size(); ++s) {
    KernelBalance k;
    k.name = steps[s].node, k.op = steps[s].op, k.tactic = steps[s].tactic;
    std::vector<double> wall, serial;
    std::vector<std::vector<double>> busy(static_cast<size_t>(threads));
    for (const auto& run : runs) {
      KILN_CHECK(s < run.size() && run[s].node == k.name, "profile --balance: the runs' steps differ at step ", s);
      const StepTiming& st = run[s];
      KILN_CHECK(!st.busy_ms.empty(), "profile --balance: step '", k.name, "' ran without the pool's stats");
      wall.push_back(st.ms);
      serial.push_back(std::max(0.0, st.ms - st.region_ms));
      for (size_t t = 0; t < busy.size(); ++t) busy[t].push_back(t < st.busy_ms.size() ? st.busy_ms[t] : 0.0);
      k.regions += static_cast<double>(st.regions), k.pieces += static_cast<double>(st.pieces);
      k.stolen += static_cast<double>(st.stolen);
      k.region_threads = std::max(k.region_threads, st.region_threads);
    }
    k.regions /= out.runs, k.pieces /= out.runs, k.stolen /= out.runs;
    k.ms = median(wall);
    k.serial_ms = median(serial);
    double most = 0;
    for (auto& b : busy) {
      k.busy_ms.push_back(median(b));
      k.work_ms += k.busy_ms.back();
      most = std::max(most, k.busy_ms.back());
    }
    // Medians of separate quantities: a busy time a hair over the wall time is noise, not work
    // outside the kernel.
    for (double b : k.busy_ms) k.imbalance_ms += most - b;
    k.overhead_ms = std::max(0.0, threads * (k.ms - most));
    out.ms += k.ms, out.work_ms += k.work_ms, out.imbalance_ms += k.imbalance_ms, out.overhead_ms += k.overhead_ms;
    out.serial_ms += k.serial_ms, out.serial_thread_ms += k.serial_thread_ms(threads);
    out.sync_ms += k.overhead_ms - k.serial_thread_ms(threads);
    if (k.region_threads <= 1) ++out.one_thread, out.one_thread_ms += k.ms;
    else if (k.caller_alone()) ++out.caller_alone, out.caller_alone_ms += k.ms;
    out.kernels.push_back(std::move(k));
  }
  return out;
}

Balance profile_balance(Executable& exe, const std::vector<Tensor>& inputs, const ProfileOptions& opt) {
  const std::vector<std::vector<StepTiming>> runs =
      extra_profiled_runs(exe, inputs, opt, "--balance", [&](std::vector<Tensor>& outputs, const RunOptions& ro) {
        const PoolStatsOn on;
        return exe.profile_run(inputs, outputs, ro);
      });
  Balance b = balance_from_runs(runs, opt.threads);
  for (int t = 0; t < opt.threads; ++t) b.thread_speeds.push_back(kernels::thread_speed(t));
  return b;
}

std::string balance_to_text(const Balance& b, size_t top) {
  std::ostringstream o;
  char buf[512];
  const double thread_ms = b.threads * b.ms;
  auto pct = [&](double x) { return thread_ms > 0 ? 100 * x / thread_ms : 0.0; };
  std::snprintf(buf, sizeof buf,
                "\nthreads (--balance, %d threads, median of %d runs): each kernel's wall time against the time "
                "each thread spent inside its parallel pieces\n",
                b.threads, b.runs);
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  %zu kernels, %.3f ms x %d threads = %.3f thread-ms: work %.3f (%.0f%%), waiting for the slowest "
                "thread or idle %.3f (%.0f%%), outside the pieces (waking, joins, serial code) %.3f (%.0f%%)\n",
                b.kernels.size(), b.ms, b.threads, thread_ms, b.work_ms, pct(b.work_ms), b.imbalance_ms,
                pct(b.imbalance_ms), b.overhead_ms, pct(b.overhead_ms));
  o << buf;
  std::snprintf(buf, sizeof buf,
                "  outside: the kernels' serial code (between and around their parallel regions) %.3f ms of wall "
                "time, %.3f thread-ms; the regions' synchronisation (waking the workers, the joins) %.3f thread-ms\n",
                b.serial_ms, b.serial_thread_ms, b.sync_ms);
  o << buf;
  if (b.thread_speeds.size() > 1) {
    std::string speeds;
    for (size_t t = 1; t < b.thread_speeds.size(); ++t) {
      std::snprintf(buf, sizeof buf, "%s thread %zu %.2f", t > 1 ? "," : "", t, b.thread_speeds[t]);
      speeds += buf;
    }
    o << "  measured speed against the calling thread's (the regions cut one share a thread, sized by it):"
      << speeds << "\n";
  }
  if (b.one_thread > 0) {
    std::snprintf(buf, sizeof buf, "  %zu kernels ran on one thread (their work too small to split): %.3f ms\n",
                  b.one_thread, b.one_thread_ms);
    o << buf;
  }
  if (b.caller_alone > 0) {
    std::snprintf(buf, sizeof buf,
                  "  %zu kernels were cut for %d threads but the calling thread ran all their pieces (the other "
                  "cores busy elsewhere, or too late): %.3f ms\n",
                  b.caller_alone, b.threads, b.caller_alone_ms);
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "  %-40s %-10s %9s %-19s %9s %9s %9s %7s %7s\n", "kernel", "tactic", "ms",
                "busy ms per thread", "wait", "outside", "serial ms", "pieces", "stolen");
  o << buf;
  std::vector<const KernelBalance*> v;
  for (const auto& k : b.kernels) v.push_back(&k);
  std::stable_sort(v.begin(), v.end(), [](const auto* x, const auto* y) {
    return x->imbalance_ms + x->overhead_ms > y->imbalance_ms + y->overhead_ms;
  });
  for (size_t i = 0; i < v.size() && i < top; ++i) {
    const KernelBalance& k = *v[i];
    std::string busy;
    for (size_t t = 0; t < k.busy_ms.size(); ++t) {
      if (t == 4) {
        busy += " ..";
        break;
      }
      std::snprintf(buf, sizeof buf, "%s%.4f", t ? " " : "", k.busy_ms[t]);
      busy += buf;
    }
    std::snprintf(buf, sizeof buf, "  %-40.40s %-10.10s %9.4f %-19s %9.4f %9.4f %9.4f %7.1f %7.1f\n", k.name.c_str(),
                  k.tactic.empty() ? "-" : k.tactic.c_str(), k.ms, busy.c_str(), k.imbalance_ms, k.overhead_ms,
                  k.serial_ms, k.pieces, k.stolen);
    o << buf;
  }
  o << "  (wait and outside in thread-ms: wait = for each thread, the busiest thread's work less its own; "
       "outside = threads x (ms - the busiest thread's work); serial ms: wall time outside the kernel's parallel "
       "regions)\n";
  return o.str();
}

json::Value balance_json(const Balance& b) {
  json::Value j;
  j.set("threads", b.threads);
  j.set("runs", b.runs);
  j.set("ms", b.ms);
  j.set("work_ms", b.work_ms);
  j.set("imbalance_ms", b.imbalance_ms);
  j.set("overhead_ms", b.overhead_ms);
  j.set("serial_ms", b.serial_ms);
  j.set("serial_thread_ms", b.serial_thread_ms);
  j.set("sync_ms", b.sync_ms);
  j.set("one_thread_ms", b.one_thread_ms);
  j.set("caller_alone_ms", b.caller_alone_ms);
  json::Value& speeds = j.set("thread_speeds", json::Array{});
  for (double x : b.thread_speeds) speeds.push(x);
  json::Value& ks = j.set("kernels", json::Array{});
  for (const auto& k : b.kernels) {
    json::Value& e = ks.push(json::Object{});
    e.set("name", k.name);
    e.set("op", k.op);
    e.set("tactic", k.tactic);
    e.set("ms", k.ms);
    json::Value& busy = e.set("busy_ms", json::Array{});
    for (double x : k.busy_ms) busy.push(x);
    e.set("work_ms", k.work_ms);
    e.set("imbalance_ms", k.imbalance_ms);
    e.set("overhead_ms", k.overhead_ms);
    e.set("serial_ms", k.serial_ms);
    e.set("region_threads", k.region_threads);
    e.set("regions", k.regions);
    e.set("pieces", k.pieces);
    e.set("stolen", k.stolen);
  }
  return j;
}

}  // namespace kiln::analysis
