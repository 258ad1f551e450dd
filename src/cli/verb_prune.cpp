// kiln prune MODEL --ratio R -o OUT: structured channel pruning with least-squares
// reconstruction, written as ONNX or a compiled artifact, with a report of FLOPs, parameters,
// latency and agreement before/after (include/kiln/compress/prune_job.h).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

#include "common.h"
#include "kiln/compress/prune_job.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

double parse_number(const std::string& flag, const std::string& text) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  KILN_CHECK(!text.empty() && end && *end == '\0' && std::isfinite(v), flag, " ", text, ": expected a number");
  return v;
}

}  // namespace

int verb_prune(int argc, char** argv) {
  Args a("prune", argc, argv,
         {"-o", "--out", "--ratio", "--norm", "--calib", "--calib-random", "--seed", "--eval", "--eval-random", "--format",
          "--exclude", "--multiple", "--ridge", "--max-rows", "--json", "--runs", "--dim", "--shape", "--cache-dir"},
         {"--report", "--residuals", "--no-reconstruct", "--quiet"});
  KILN_CHECK(a.positional().size() == 1, "kiln prune: expected one MODEL argument (kiln prune MODEL --ratio R -o OUT)");
  compress::PruneJob job;
  job.model_path = a.positional()[0];
  job.out_path = a.get_or("-o", a.get_or("--out", ""));
  KILN_CHECK(!job.out_path.empty(), "kiln prune: -o OUT is required");
  auto ratio = a.get("--ratio");
  KILN_CHECK(ratio.has_value(), "kiln prune: --ratio R is required (the share of channels to remove, e.g. 0.3)");
  job.options.ratio = parse_number("--ratio", *ratio);
  KILN_CHECK(job.options.ratio > 0 && job.options.ratio < 1, "--ratio ", *ratio,
             ": expected a share of channels in (0, 1), e.g. 0.3");
  std::string norm = a.get_or("--norm", "l1");
  KILN_CHECK(norm == "l1" || norm == "l2", "--norm ", norm, ": expected l1 or l2");
  job.options.norm = norm == "l1" ? compress::ChannelNorm::L1 : compress::ChannelNorm::L2;
  job.options.residuals = a.has("--residuals");
  job.options.multiple = a.get_int("--multiple", 1);
  KILN_CHECK(job.options.multiple >= 1, "--multiple ", job.options.multiple, ": expected a positive count");
  for (const auto& e : a.all("--exclude")) {
    size_t start = 0;
    for (;;) {
      size_t comma = e.find(',', start);
      std::string s = e.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!s.empty()) job.options.exclude.push_back(s);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  job.format = a.get_or("--format", "");
  job.reconstruct = !a.has("--no-reconstruct");
  job.calib_dir = a.get_or("--calib", "");
  job.calib_random = static_cast<int>(a.get_int("--calib-random", 0));
  KILN_CHECK(job.calib_random >= 0, "--calib-random ", job.calib_random, ": expected a positive count");
  KILN_CHECK(job.calib_dir.empty() || job.calib_random == 0, "kiln prune: give --calib DIR or --calib-random N, not both");
  KILN_CHECK(!job.reconstruct || !job.calib_dir.empty() || job.calib_random > 0,
             "kiln prune: missing calibration data for the reconstruction: --calib DIR or --calib-random N "
             "(or --no-reconstruct)");
  if (auto r = a.get("--ridge")) {
    job.reconstruction.ridge = parse_number("--ridge", *r);
    KILN_CHECK(job.reconstruction.ridge >= 0, "--ridge ", *r, ": expected a non-negative number");
  }
  job.reconstruction.max_rows = a.get_int("--max-rows", job.reconstruction.max_rows);
  KILN_CHECK(job.reconstruction.max_rows > 0, "--max-rows: expected a positive count");
  job.seed = static_cast<uint64_t>(a.get_int("--seed", 1));
  ShapeFlags flags = parse_shape_flags(a);
  job.inputs = flags.spec;
  job.cache_dir = a.get_or("--cache-dir", "");
  const bool quiet = a.has("--quiet");
  job.log = quiet ? nullptr : &std::cerr;
  job.measure = a.has("--report") || a.has("--json") || a.has("--eval");
  job.eval_dir = a.get_or("--eval", "");
  job.eval_random = static_cast<int>(a.get_int("--eval-random", 4));
  KILN_CHECK(job.eval_random > 0, "--eval-random: expected a positive count");
  job.runs = static_cast<int>(a.get_int("--runs", 20));
  KILN_CHECK(job.runs > 0, "--runs: expected a positive count");

  compress::PruneReport r = compress::prune_file(job);
  std::fprintf(stderr, "wrote %s (%.2f s)\n", job.out_path.c_str(), r.seconds_total);
  if (!quiet || a.has("--report")) std::fputs(compress::format_prune_report(r).c_str(), stdout);
  if (auto path = a.get("--json")) {
    std::ofstream f(*path);
    f << compress::prune_report_json(r);
    KILN_CHECK(f.good(), *path, ": cannot write the JSON report");
  }
  return 0;
}

}  // namespace kiln::cli
