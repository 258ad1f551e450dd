#include "bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "common.h"
#include "kiln/analysis/machine.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/plan/json.h"

namespace kiln::cli {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double round3(double v) { return std::round(v * 1000) / 1000; }

double rel_diff(const Comparison& c) { return c.max_abs_ref > 0 ? c.max_abs_diff / c.max_abs_ref : c.max_abs_diff; }

json::Value stats_json(const BackendResult& b, bool with_times) {
  json::Value o;
  o.set("backend", b.name);
  o.set("median_ms", round3(b.stats.median_ms));
  o.set("p90_ms", round3(b.stats.p90_ms));
  o.set("min_ms", round3(b.stats.min_ms));
  o.set("mean_ms", round3(b.stats.mean_ms));
  o.set("runs", b.stats.runs);
  if (b.compile_s) o.set("compile_s", round3(*b.compile_s));
  o.set("idle_wait_ms", round3(b.idle_wait_ms));
  if (b.warmup_fastest_ms) o.set("warmup_fastest_ms", round3(*b.warmup_fastest_ms));
  if (with_times) {
    json::Value& times = o.set("times_ms", json::Array{});
    for (double t : b.times_ms) times.push(round3(t));
  }
  return o;
}

// The eager-vs-compiled comparison, when both ran.
struct EagerVsCompiled {
  double interp_ms, compiled_ms, speedup;
  std::optional<double> compile_s, break_even;
};
std::optional<EagerVsCompiled> eager_vs_compiled(const BenchResult& r) {
  const BackendResult* e = r.find("interp");
  const BackendResult* c = r.find("compiled");
  if (!e || !c) return std::nullopt;
  EagerVsCompiled v{e->stats.median_ms, c->stats.median_ms, e->stats.median_ms / c->stats.median_ms, c->compile_s,
                    std::nullopt};
  if (c->compile_s) v.break_even = break_even_runs(*c->compile_s, v.interp_ms, v.compiled_ms);
  return v;
}

const BackendResult* find_in(const std::vector<BackendResult>& backends, const std::string& name) {
  for (const auto& b : backends)
    if (b.name == name) return &b;
  return nullptr;
}

json::Value paired_json(const PairedRatio& p) {
  json::Value e;
  e.set("median", p.median);
  e.set("q25", p.q25);
  e.set("q75", p.q75);
  e.set("blocks", p.blocks);
  return e;
}

}  // namespace

LatencyStats summarize(std::vector<double> ms) {
  KILN_CHECK(!ms.empty(), "bench: no timed runs");
  std::sort(ms.begin(), ms.end());
  size_t n = ms.size();
  LatencyStats s;
  s.runs = static_cast<int>(n);
  s.median_ms = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  s.p90_ms = ms[static_cast<size_t>(std::max<double>(0, std::ceil(0.9 * static_cast<double>(n)) - 1))];
  s.min_ms = ms.front();
  s.mean_ms = std::accumulate(ms.begin(), ms.end(), 0.0) / static_cast<double>(n);
  return s;
}

std::optional<double> break_even_runs(double compile_seconds, double eager_ms, double compiled_ms) {
  double saved_ms = eager_ms - compiled_ms;
  if (saved_ms <= 0) return std::nullopt;
  return std::ceil(compile_seconds * 1000 / saved_ms);
}

std::optional<PairedRatio> paired_ratio(const BackendResult& a, const BackendResult& b, int block) {
  if (block < 1 || a.times_ms.size() != b.times_ms.size() || a.times_ms.empty()) return std::nullopt;
  std::vector<double> ratios;
  for (size_t i = 0; i < a.times_ms.size(); i += static_cast<size_t>(block)) {
    const size_t end = std::min(a.times_ms.size(), i + static_cast<size_t>(block));
    auto median_of = [&](const std::vector<double>& t) {
      return summarize(std::vector<double>(t.begin() + static_cast<std::ptrdiff_t>(i), t.begin() + static_cast<std::ptrdiff_t>(end))).median_ms;
    };
    const double ma = median_of(a.times_ms), mb = median_of(b.times_ms);
    if (mb > 0) ratios.push_back(ma / mb);
  }
  if (ratios.empty()) return std::nullopt;
  std::sort(ratios.begin(), ratios.end());
  auto quantile = [&](double q) {
    const double at = q * static_cast<double>(ratios.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(at)), hi = std::min(lo + 1, ratios.size() - 1);
    return ratios[lo] + (ratios[hi] - ratios[lo]) * (at - static_cast<double>(lo));
  };
  return PairedRatio{quantile(0.5), quantile(0.25), quantile(0.75), static_cast<int>(ratios.size())};
}

std::optional<PlacementSplit> split_by_placement(const BenchResult& r) {
  if (r.round_trips_ns.size() < 2 || r.block < 1 || r.backends.empty()) return std::nullopt;
  const size_t rounds = r.round_trips_ns.size() - 1, block = static_cast<size_t>(r.block);
  for (const auto& b : r.backends)  // every round a block of each backend's runs, the last one possibly short
    if (b.times_ms.size() > rounds * block || b.times_ms.size() <= (rounds - 1) * block) return std::nullopt;
  PlacementRounds close, far;
  close.placement = "close", far.placement = "far";
  for (const auto& b : r.backends) {
    close.backends.push_back({b.name, {}, {}, std::nullopt, 0, std::nullopt});
    far.backends.push_back(close.backends.back());
  }
  PlacementSplit split;
  for (size_t i = 0; i < rounds; ++i) {
    const double before = r.round_trips_ns[i], after = r.round_trips_ns[i + 1];
    if (before <= 0 || after <= 0) {
      ++split.unread;
      continue;
    }
    const bool far_before = before > kernels::kFarCoresNs, far_after = after > kernels::kFarCoresNs;
    if (far_before != far_after) {
      ++split.changed;
      continue;
    }
    PlacementRounds& p = far_before ? far : close;
    ++p.rounds;
    for (size_t k = 0; k < r.backends.size(); ++k) {
      const std::vector<double>& t = r.backends[k].times_ms;
      const auto first = t.begin() + static_cast<std::ptrdiff_t>(i * block);
      const auto end = t.begin() + static_cast<std::ptrdiff_t>(std::min(t.size(), (i + 1) * block));
      p.backends[k].times_ms.insert(p.backends[k].times_ms.end(), first, end);
    }
  }
  for (PlacementRounds* p : {&close, &far}) {
    if (p->rounds == 0) continue;
    for (auto& b : p->backends) b.stats = summarize(b.times_ms);
    split.placements.push_back(std::move(*p));
  }
  return split;
}

const BackendResult* BenchResult::find(const std::string& name) const { return find_in(backends, name); }

bool BenchResult::checks_ok() const {
  return std::all_of(checks.begin(), checks.end(), [](const OutputCheck& c) { return c.c.ok; });
}

std::string render_text(const BenchResult& r) {
  std::string s = str_cat("kiln bench ", r.model, ": ", r.threads, " thread", r.threads == 1 ? "" : "s", ", batch ",
                          r.batch, ", ", r.runs, " runs after ", r.warmup, " warm-up, interleaved in blocks of ",
                          r.block, r.gap_ms > 0 ? str_cat(", each run ", r.gap_ms, " ms after the one before") : "",
                          "\n");
  if (!r.source_model.empty() && r.source_model != r.model) s += "source model: " + r.source_model + "\n";
  for (const BackendResult& b : r.backends)
    if (b.idle_wait_ms >= 1)  // a thread pool spinning after its runs: waited out before the next block
      s += str_cat(b.name, " kept the CPU busy ", fmt("%.0f", b.idle_wait_ms),
                   " ms after its blocks (median; its threads spin): the next block waited for it\n");
  if (r.load_before >= 0) {
    s += str_cat("machine: ", r.cores, " cores, 1-minute load average ", fmt("%.2f", r.load_before), " before, ",
                 fmt("%.2f", r.load_after), " after\n");
    if (r.load_before > r.cores)
      s += "  note: the machine was busy before the bench started: other work shares the cores, compare with care\n";
  }
  if (!r.pinned_cpus.empty())
    s += str_cat("pinned: every backend ran on ", cpus_text(r.pinned_cpus),
                 " (--no-pin lets the scheduler place them)\n");
  if (r.capacity_before > 0) {
    s += str_cat("parallel capacity: ", fmt("%.2f", r.capacity_before), " before, ", fmt("%.2f", r.capacity_after),
                 " after, of ", r.capacity_threads, " (FMA rate of ", r.capacity_threads,
                 " threads together / one alone)\n");
    if (std::min(r.capacity_before, r.capacity_after) < analysis::kContendedShare * r.capacity_threads)
      s += str_cat("  note: the host gave the ", r.capacity_threads,
                   " threads less than their cores' worth of compute (other work on the same physical cores?): "
                   "multi-thread timings show the host, not the code\n");
  }
  if (r.core_trip_before_ns > 0 || r.core_trip_after_ns > 0) {
    auto trip = [](double ns) { return ns > 0 ? fmt("%.0f ns", ns) : std::string("not measured"); };
    s += str_cat("cores: a cache line's round trip ", trip(r.core_trip_before_ns), " before, ",
                 trip(r.core_trip_after_ns), " after (far apart above ", fmt("%.0f", kernels::kFarCoresNs),
                 " ns: kiln then fetches and claims its outputs' lines before writing them)\n");
  }
  s += "inputs:\n";
  for (const auto& i : r.inputs) s += "  " + i + "\n";
  if (r.random_integers)
    s += "  note: random integer inputs may not be valid ids for this model; give --input NAME=FILE.npy\n";
  if (!r.check_reference.empty()) {
    if (r.check_min_cosine > 0)
      s += str_cat("outputs vs ", r.check_reference, " (int8: the two round differently; ok when cosine >= ",
                   r.check_min_cosine, "):\n");
    else
      s += str_cat("outputs vs ", r.check_reference, " (ok when max|diff| <= ", r.check_tolerance, " * max|ref|):\n");
    for (const auto& c : r.checks) {
      char line[256];
      std::snprintf(line, sizeof line, "  %-9s %-24s max|diff|/max|ref|=%-9.3g cos=%.6f %s\n", c.backend.c_str(),
                    c.output.c_str(), rel_diff(c.c), c.c.cosine,
                    !c.c.same_shape ? "SHAPE MISMATCH" : c.c.ok ? "ok" : "MISMATCH");
      s += line;
    }
  }
  const BackendResult* ort = r.find("ort");
  char line[256];
  std::snprintf(line, sizeof line, "%-10s %10s %10s %10s %10s %8s\n", "backend", "median ms", "p90 ms", "min ms",
                "mean ms", ort ? "vs ort" : "");
  s += line;
  for (const auto& b : r.backends) {
    std::string vs = ort ? fmt("%.2fx", b.stats.median_ms / ort->stats.median_ms) : "";
    std::snprintf(line, sizeof line, "%-10s %10.3f %10.3f %10.3f %10.3f %8s\n", b.name.c_str(), b.stats.median_ms,
                  b.stats.p90_ms, b.stats.min_ms, b.stats.mean_ms, vs.c_str());
    s += line;
  }
  if (const BackendResult* k = r.find(r.kiln); k && ort) {
    s += str_cat("kiln (", k->name, ") / ORT, medians: ", fmt("%.2fx", k->stats.median_ms / ort->stats.median_ms),
                 " (minimums: ", fmt("%.2fx", k->stats.min_ms / ort->stats.min_ms), ")\n");
    if (auto p = paired_ratio(*k, *ort, r.block); p && p->blocks > 1)
      s += str_cat("kiln (", k->name, ") / ORT, block by block: ", fmt("%.3fx", p->median), " median, quartiles ",
                   fmt("%.3f", p->q25), "-", fmt("%.3f", p->q75), " over ", p->blocks, " rounds\n");
  }
  if (auto split = split_by_placement(r)) {
    s += str_cat("by placement (the cores' round trip read before and after each round; far apart above ",
                 fmt("%.0f", kernels::kFarCoresNs), " ns):\n");
    for (const PlacementRounds& p : split->placements) {
      s += str_cat("  ", p.placement, ", ", p.rounds, p.rounds == 1 ? " round:" : " rounds:");
      for (const BackendResult& b : p.backends) s += str_cat(" ", b.name, " ", fmt("%.3f", b.stats.median_ms), " ms");
      const BackendResult *k = find_in(p.backends, r.kiln), *o = find_in(p.backends, "ort");
      if (k && o) {
        s += str_cat(", kiln / ORT ", fmt("%.3fx", k->stats.median_ms / o->stats.median_ms));
        if (auto q = paired_ratio(*k, *o, r.block)) s += str_cat(" (block by block ", fmt("%.3fx", q->median), ")");
      }
      s += "\n";
    }
    if (split->changed > 0)
      s += str_cat("  ", split->changed, split->changed == 1 ? " round" : " rounds",
                   " during which the placement changed: left out\n");
    if (split->unread > 0)
      s += str_cat("  ", split->unread, split->unread == 1 ? " round" : " rounds",
                   " without a reading (the worker did not answer in time): left out\n");
  }
  if (auto v = eager_vs_compiled(r)) {
    s += str_cat("compiled vs interp: speed-up ", fmt("%.2fx", v->speedup), " (", fmt("%.3f", v->interp_ms), " -> ",
                 fmt("%.3f", v->compiled_ms), " ms)");
    if (v->compile_s) {
      s += str_cat(", compile ", fmt("%.2f", *v->compile_s), " s, pays for itself after ",
                   v->break_even ? fmt("%.0f inferences", *v->break_even) : "never (compiled is not faster)");
    }
    s += "\n";
  }
  return s;
}

std::string render_json(const BenchResult& r) {
  json::Value j;
  j.set("model", r.model);
  if (!r.source_model.empty()) {
    j.set("source_model", r.source_model);
    j.set("source_sha256", r.source_sha256);
  }
  j.set("threads", r.threads);
  j.set("batch", r.batch);
  j.set("runs", r.runs);
  j.set("warmup", r.warmup);
  j.set("block", r.block);
  j.set("gap_ms", r.gap_ms);
  j.set("idle_spin_ms", r.idle_spin_ms);
  j.set("cores", r.cores);
  j.set("pinned_cpus", r.pinned_cpus.empty() ? json::Value() : json::Value(r.pinned_cpus));
  json::Value& load = j.set("load_avg", json::Array{});
  for (double l : {r.load_before, r.load_after}) load.push(l >= 0 ? json::Value(l) : json::Value());
  if (r.core_trip_before_ns > 0 || r.core_trip_after_ns > 0) {
    json::Value& trip = j.set("core_round_trip_ns", json::Array{});
    for (double ns : {r.core_trip_before_ns, r.core_trip_after_ns}) trip.push(ns > 0 ? std::round(ns) : -1.0);
  }
  if (r.capacity_before > 0) {
    json::Value& cap = j.set("parallel_capacity", json::Array{});
    for (double c : {r.capacity_before, r.capacity_after}) cap.push(round3(c));
  }
  json::Value& inputs = j.set("inputs", json::Array{});
  for (const auto& i : r.inputs) inputs.push(i);
  const BackendResult* ort = r.find("ort");
  if (const BackendResult* k = r.find(r.kiln)) j.set("kiln", stats_json(*k, false));
  if (ort) j.set("ort", stats_json(*ort, false));
  if (const BackendResult* k = r.find(r.kiln); k && ort) {
    j.set("ratio", k->stats.median_ms / ort->stats.median_ms);
    j.set("ratio_min", k->stats.min_ms / ort->stats.min_ms);
    if (auto p = paired_ratio(*k, *ort, r.block)) j.set("ratio_paired", paired_json(*p));
  }
  if (auto split = split_by_placement(r)) {
    json::Value& trips = j.set("round_trips_ns", json::Array{});
    for (double ns : r.round_trips_ns) trips.push(ns > 0 ? std::round(ns) : -1.0);
    json::Value& by = j.set("by_placement", json::Object{});
    for (const PlacementRounds& p : split->placements) {
      json::Value& e = by.set(p.placement, json::Object{});
      e.set("rounds", p.rounds);
      json::Value& bs = e.set("backends", json::Object{});
      for (const BackendResult& b : p.backends) {
        json::Value& st = bs.set(b.name, json::Object{});
        st.set("median_ms", round3(b.stats.median_ms));
        st.set("p90_ms", round3(b.stats.p90_ms));
        st.set("min_ms", round3(b.stats.min_ms));
        st.set("runs", b.stats.runs);
      }
      const BackendResult *k = find_in(p.backends, r.kiln), *o = find_in(p.backends, "ort");
      if (k && o) {
        e.set("ratio", k->stats.median_ms / o->stats.median_ms);
        if (auto q = paired_ratio(*k, *o, r.block)) e.set("ratio_paired", paired_json(*q));
      }
    }
    by.set("changed_rounds", split->changed);
    by.set("unread_rounds", split->unread);
  }
  json::Value& backends = j.set("backends", json::Object{});
  for (const auto& b : r.backends) {
    json::Value& e = backends.set(b.name, stats_json(b, true));
    if (ort) e.set("vs_ort", b.stats.median_ms / ort->stats.median_ms);
  }
  if (auto v = eager_vs_compiled(r)) {
    json::Value& e = j.set("compiled_vs_interp", json::Object{});
    e.set("interp_median_ms", round3(v->interp_ms));
    e.set("compiled_median_ms", round3(v->compiled_ms));
    e.set("speedup", v->speedup);
    e.set("compile_s", v->compile_s ? json::Value(round3(*v->compile_s)) : json::Value());
    e.set("break_even_runs", !v->compile_s ? json::Value() : v->break_even ? json::Value(*v->break_even) : json::Value("never"));
  }
  if (!r.check_reference.empty()) {
    json::Value& check = j.set("check", json::Object{});
    check.set("reference", r.check_reference);
    check.set("tolerance", r.check_tolerance);
    if (r.check_min_cosine > 0) check.set("min_cosine", r.check_min_cosine);
    check.set("ok", r.checks_ok());
    json::Value& outputs = check.set("outputs", json::Array{});
    for (const auto& c : r.checks) {
      json::Value& e = outputs.push(json::Object{});
      e.set("backend", c.backend);
      e.set("output", c.output);
      e.set("same_shape", c.c.same_shape);
      e.set("max_abs_diff", c.c.max_abs_diff);
      e.set("max_abs_ref", c.c.max_abs_ref);
      e.set("rel_diff", rel_diff(c.c));
      e.set("cosine", c.c.cosine);
      e.set("ok", c.c.ok);
    }
  }
  return j.dump();
}

}  // namespace kiln::cli
