// The pruning report as a table and as JSON.
#include <cstdio>
#include <sstream>

#include "kiln/compress/prune_job.h"
#include "kiln/compress/report.h"

namespace kiln::compress {
namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string group_name(const ChannelGroup& g) {
  std::string s = g.producers.empty() ? "?" : g.producers.front();
  if (g.producers.size() > 1) s += " +" + std::to_string(g.producers.size() - 1);
  return s;
}

double ratio(double a, double b) { return b > 0 ? a / b : 0.0; }

}  // namespace

std::string format_prune_report(const PruneReport& r) {
  std::ostringstream s;
  char b[320];
  s << "pruning report: " << r.model << " -> " << r.out << " (format " << r.format << ", calibration " << r.calibration
    << (r.random_calibration ? " RANDOM" : "") << ")\n";
  int pruned = 0;
  for (const auto& g : r.plan.groups) pruned += g.pruned();
  s << "  channel groups: " << pruned << " pruned, " << r.plan.groups.size() - pruned << " kept\n";
  s << "    group (first producer)                          channels  kept  why kept\n";
  for (const auto& g : r.plan.groups) {
    std::snprintf(b, sizeof b, "    %-48s %8lld  %4lld  %s\n", group_name(g).c_str(), static_cast<long long>(g.channels),
                  static_cast<long long>(g.pruned() ? g.kept.size() : g.channels), g.skipped.c_str());
    s << b;
  }
  if (!r.fits.empty()) {
    s << "  reconstruction (relative squared error of each refitted layer's output on the validation rows,\n"
      << "  every 4th calibration image; lambda chosen on them, '-' = the fit did not help, plain weights kept):\n"
      << "    layer                                               rows  validation  unknowns  lambda    plain    fitted\n";
    for (const auto& f : r.fits) {
      std::snprintf(b, sizeof b, "    %-48s %7lld  %10lld  %8lld  %-7s  %.5f  %.5f%s%s\n", f.node.c_str(),
                    static_cast<long long>(f.rows), static_cast<long long>(f.validation_rows),
                    static_cast<long long>(f.unknowns), f.ridge > 0 ? fmt("%.0e", f.ridge).c_str() : "-", f.error_plain,
                    f.error_fit, f.note.empty() ? "" : "  ", f.note.c_str());
      s << b;
    }
    if (r.validation_cosine_plain > 0 || r.validation_cosine_fit > 0) {
      std::snprintf(b, sizeof b, "    model output on the validation images: cosine plain %.6f, refitted %.6f: %s\n",
                    r.validation_cosine_plain, r.validation_cosine_fit,
                    r.reconstruction_kept ? "refit kept" : "refit DROPPED (plain pruning agrees better)");
      s << b;
    }
    s << "    " << fmt("%.1f", r.seconds_reconstruct) << " s\n";
  }
  std::snprintf(b, sizeof b, "  FLOPs  %.4g -> %.4g (%.3fx)\n  params %.4g -> %.4g (%.3fx), weights %.2f -> %.2f MiB\n",
                r.before.flops, r.after.flops, ratio(r.after.flops, r.before.flops), r.before.params, r.after.params,
                ratio(r.after.params, r.before.params), r.before.weight_bytes / 1048576.0, r.after.weight_bytes / 1048576.0);
  s << b;
  if (r.measured) {
    s << "  held-out inputs: " << r.eval_source << ", " << r.eval_samples << " samples\n";
    std::snprintf(b, sizeof b, "  output cosine to the original: %.6f (plain pruning %.6f), SQNR %.2f dB\n", r.cosine,
                  r.cosine_plain, r.sqnr_db);
    s << b;
    if (r.accuracy_before) {
      std::snprintf(b, sizeof b, "  accuracy: original %.2f%%  pruned %.2f%% (%+.2f points; plain pruning %.2f%%)\n",
                    *r.accuracy_before, *r.accuracy_after, *r.accuracy_after - *r.accuracy_before, *r.accuracy_plain);
      s << b;
    }
    std::snprintf(b, sizeof b, "  latency (compiled, median of %d, interleaved): original %.3f ms  pruned %.3f ms  (%.2fx)\n",
                  r.runs, r.ms_before, r.ms_after, ratio(r.ms_before, r.ms_after));
    s << b;
  }
  s << "  " << fmt("%.1f", r.seconds_total) << " s in all\n";
  return s.str();
}

std::string prune_report_json(const PruneReport& r) {
  std::ostringstream s;
  s << "{\n  \"model\": " << json_str(r.model) << ",\n  \"out\": " << json_str(r.out) << ",\n  \"format\": "
    << json_str(r.format) << ",\n  \"calibration\": " << json_str(r.calibration) << ",\n  \"groups\": [";
  for (size_t i = 0; i < r.plan.groups.size(); ++i) {
    const auto& g = r.plan.groups[i];
    s << (i ? ",\n    " : "\n    ") << "{\"producers\": [";
    for (size_t k = 0; k < g.producers.size(); ++k) s << (k ? ", " : "") << json_str(g.producers[k]);
    s << "], \"readers\": [";
    for (size_t k = 0; k < g.readers.size(); ++k) s << (k ? ", " : "") << json_str(g.readers[k]);
    s << "], \"channels\": " << g.channels << ", \"kept\": " << (g.pruned() ? g.kept.size() : g.channels)
      << ", \"skipped\": " << json_str(g.skipped) << "}";
  }
  s << "],\n  \"reconstruction\": [";
  for (size_t i = 0; i < r.fits.size(); ++i)
    s << (i ? ",\n    " : "\n    ") << "{\"node\": " << json_str(r.fits[i].node) << ", \"rows\": " << r.fits[i].rows
      << ", \"validation_rows\": " << r.fits[i].validation_rows << ", \"unknowns\": " << r.fits[i].unknowns
      << ", \"ridge\": " << json_num(r.fits[i].ridge) << ", \"error_plain\": " << json_num(r.fits[i].error_plain)
      << ", \"error_fit\": " << json_num(r.fits[i].error_fit) << "}";
  s << "],\n  \"reconstruction_kept\": " << (r.reconstruction_kept ? "true" : "false")
    << ",\n  \"validation_cosine\": {\"plain\": " << json_num(r.validation_cosine_plain) << ", \"fit\": "
    << json_num(r.validation_cosine_fit) << "}";
  s << ",\n  \"flops\": {\"before\": " << json_num(r.before.flops) << ", \"after\": " << json_num(r.after.flops)
    << "},\n  \"params\": {\"before\": " << json_num(r.before.params) << ", \"after\": " << json_num(r.after.params) << "}";
  if (r.measured) {
    s << ",\n  \"cosine\": " << json_num(r.cosine) << ",\n  \"cosine_plain\": " << json_num(r.cosine_plain)
      << ",\n  \"sqnr_db\": " << json_num(r.sqnr_db) << ",\n  \"latency_ms\": {\"before\": " << json_num(r.ms_before)
      << ", \"after\": " << json_num(r.ms_after) << ", \"runs\": " << r.runs << "}";
    if (r.accuracy_before)
      s << ",\n  \"accuracy\": {\"before\": " << json_num(*r.accuracy_before) << ", \"after\": "
        << json_num(*r.accuracy_after) << ", \"plain\": " << json_num(*r.accuracy_plain) << "}";
  }
  s << "\n}\n";
  return s.str();
}

}  // namespace kiln::compress
