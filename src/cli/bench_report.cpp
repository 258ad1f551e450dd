#include "bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "../analysis/json_writer.h"
#include "kiln/ir/error.h"

namespace kiln::cli {
namespace {

using analysis::JsonWriter;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

double round3(double v) { return std::round(v * 1000) / 1000; }

double rel_diff(const Comparison& c) { return c.max_abs_ref > 0 ? c.max_abs_diff / c.max_abs_ref : c.max_abs_diff; }

void write_stats(JsonWriter& w, const BackendResult& b, bool with_times) {
  w.key("backend").value(b.name);
  w.key("median_ms").value(round3(b.stats.median_ms));
  w.key("p90_ms").value(round3(b.stats.p90_ms));
  w.key("min_ms").value(round3(b.stats.min_ms));
  w.key("mean_ms").value(round3(b.stats.mean_ms));
  w.key("runs").value(static_cast<int64_t>(b.stats.runs));
  if (b.compile_s) w.key("compile_s").value(round3(*b.compile_s));
  if (with_times) {
    w.key("times_ms").begin_array();
    for (double t : b.times_ms) w.value(round3(t));
    w.end_array();
  }
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

const BackendResult* BenchResult::find(const std::string& name) const {
  for (const auto& b : backends)
    if (b.name == name) return &b;
  return nullptr;
}

bool BenchResult::checks_ok() const {
  return std::all_of(checks.begin(), checks.end(), [](const OutputCheck& c) { return c.c.ok; });
}

std::string render_text(const BenchResult& r) {
  std::string s = str_cat("kiln bench ", r.model, ": ", r.threads, " thread", r.threads == 1 ? "" : "s", ", batch ",
                          r.batch, ", ", r.runs, " runs after ", r.warmup, " warm-up, interleaved in blocks of ",
                          r.block, "\n");
  if (!r.source_model.empty() && r.source_model != r.model) s += "source model: " + r.source_model + "\n";
  if (r.load_before >= 0) {
    s += str_cat("machine: ", r.cores, " cores, 1-minute load average ", fmt("%.2f", r.load_before), " before, ",
                 fmt("%.2f", r.load_after), " after\n");
    if (r.load_before > r.cores)
      s += "  note: the machine was busy before the bench started: other work shares the cores, compare with care\n";
  }
  s += "inputs:\n";
  for (const auto& i : r.inputs) s += "  " + i + "\n";
  if (r.random_integers)
    s += "  note: random integer inputs may not be valid ids for this model; give --input NAME=FILE.npy\n";
  if (!r.check_reference.empty()) {
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
  if (const BackendResult* k = r.find(r.kiln); k && ort)
    s += str_cat("kiln (", k->name, ") / ORT, medians: ", fmt("%.2fx", k->stats.median_ms / ort->stats.median_ms),
                 " (minimums: ", fmt("%.2fx", k->stats.min_ms / ort->stats.min_ms), ")\n");
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
  JsonWriter w;
  w.begin_object();
  w.key("model").value(r.model);
  if (!r.source_model.empty()) {
    w.key("source_model").value(r.source_model);
    w.key("source_sha256").value(r.source_sha256);
  }
  w.key("threads").value(static_cast<int64_t>(r.threads));
  w.key("batch").value(r.batch);
  w.key("runs").value(static_cast<int64_t>(r.runs));
  w.key("warmup").value(static_cast<int64_t>(r.warmup));
  w.key("block").value(static_cast<int64_t>(r.block));
  w.key("cores").value(static_cast<int64_t>(r.cores));
  w.key("load_avg").begin_array();
  for (double l : {r.load_before, r.load_after}) l >= 0 ? w.value(l) : w.null();
  w.end_array();
  w.key("inputs").begin_array();
  for (const auto& i : r.inputs) w.value(i);
  w.end_array();
  const BackendResult* ort = r.find("ort");
  if (const BackendResult* k = r.find(r.kiln)) {
    w.key("kiln").begin_object();
    write_stats(w, *k, false);
    w.end_object();
  }
  if (ort) {
    w.key("ort").begin_object();
    write_stats(w, *ort, false);
    w.end_object();
  }
  if (const BackendResult* k = r.find(r.kiln); k && ort) {
    w.key("ratio").value(k->stats.median_ms / ort->stats.median_ms);
    w.key("ratio_min").value(k->stats.min_ms / ort->stats.min_ms);
  }
  w.key("backends").begin_object();
  for (const auto& b : r.backends) {
    w.key(b.name).begin_object();
    write_stats(w, b, true);
    if (ort) w.key("vs_ort").value(b.stats.median_ms / ort->stats.median_ms);
    w.end_object();
  }
  w.end_object();
  if (auto v = eager_vs_compiled(r)) {
    w.key("compiled_vs_interp").begin_object();
    w.key("interp_median_ms").value(round3(v->interp_ms));
    w.key("compiled_median_ms").value(round3(v->compiled_ms));
    w.key("speedup").value(v->speedup);
    w.key("compile_s");
    v->compile_s ? w.value(round3(*v->compile_s)) : w.null();
    w.key("break_even_runs");
    if (!v->compile_s) w.null();
    else if (v->break_even) w.value(*v->break_even);
    else w.value("never");
    w.end_object();
  }
  if (!r.check_reference.empty()) {
    w.key("check").begin_object();
    w.key("reference").value(r.check_reference);
    w.key("tolerance").value(r.check_tolerance);
    w.key("ok").value(r.checks_ok());
    w.key("outputs").begin_array();
    for (const auto& c : r.checks) {
      w.begin_object();
      w.key("backend").value(c.backend);
      w.key("output").value(c.output);
      w.key("same_shape").value(c.c.same_shape);
      w.key("max_abs_diff").value(c.c.max_abs_diff);
      w.key("max_abs_ref").value(c.c.max_abs_ref);
      w.key("rel_diff").value(rel_diff(c.c));
      w.key("cosine").value(c.c.cosine);
      w.key("ok").value(c.c.ok);
      w.end_object();
    }
    w.end_array();
    w.end_object();
  }
  w.end_object();
  return w.str();
}

}  // namespace kiln::cli
