// kiln quantize MODEL -o OUT: INT8 post-training quantization (static with calibration, or
// dynamic), written as a compiled artifact or a QDQ ONNX model, with an optional report of what
// it cost in accuracy and gained in speed and size (include/kiln/compress/).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "common.h"
#include "kiln/compress/driver.h"
#include "kiln/compress/report.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

std::vector<std::string> split_list(const std::vector<std::string>& items) {
  std::vector<std::string> out;
  for (const auto& item : items) {
    size_t start = 0;
    for (;;) {
      size_t comma = item.find(',', start);
      std::string s = item.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!s.empty()) out.push_back(s);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return out;
}

}  // namespace

int verb_quantize(int argc, char** argv) {
  Args a("quantize", argc, argv,
         {"-o", "--out", "--calib", "--calib-random", "--seed", "--method", "--activations", "--exclude", "--format",
          "--dim", "--shape", "--eval", "--json", "--cache-dir", "--runs", "--accuracy-budget",
          "--eval-random", "--budget-metric", "--precision"},
         {"--per-channel", "--per-tensor", "--reduce-range", "--dynamic", "--report", "--quiet"});
  KILN_CHECK(a.positional().size() == 1, "kiln quantize: expected one MODEL argument (kiln quantize MODEL -o OUT)");
  compress::QuantizeJob job;
  job.model_path = a.positional()[0];
  job.out_path = a.get_or("-o", a.get_or("--out", ""));
  KILN_CHECK(!job.out_path.empty(), "kiln quantize: -o OUT is required");
  std::string format = a.get_or("--format", "kiln");
  KILN_CHECK(format == "kiln" || format == "qdq", "--format ", format, ": expected kiln or qdq");
  job.format = format == "qdq" ? compress::OutputFormat::Qdq : compress::OutputFormat::Kiln;
  job.dynamic = a.has("--dynamic");
  job.options.calibration = compress::parse_calibration(a.get_or("--method", "minmax"));
  KILN_CHECK(!(a.has("--per-channel") && a.has("--per-tensor")), "kiln quantize: --per-channel or --per-tensor, not both");
  job.options.per_channel = !a.has("--per-tensor");
  job.options.reduce_range = a.has("--reduce-range");
  KILN_CHECK(!job.options.reduce_range || !a.has("--dynamic"), "kiln quantize: --reduce-range applies to static quantization, not --dynamic");
  std::string act = a.get_or("--activations", "u8");
  KILN_CHECK(act == "u8" || act == "s8", "--activations ", act, ": expected u8 or s8");
  job.options.activations = act == "u8" ? DType::u8 : DType::i8;
  job.options.exclude = split_list(a.all("--exclude"));
  job.calib_dir = a.get_or("--calib", "");
  job.calib_random = static_cast<int>(a.get_int("--calib-random", 0));
  job.precision = a.get_or("--precision", "int8");
  KILN_CHECK(job.precision == "int8" || job.precision == "bf16" || job.precision == "fp16", "--precision ",
             job.precision, ": expected int8, bf16 or fp16");
  const bool half = job.precision != "int8";
  KILN_CHECK(!half || (!job.dynamic && job.calib_dir.empty() && job.calib_random == 0),
             "kiln quantize --precision ", job.precision, " needs no calibration (--calib, --calib-random, --dynamic)");
  KILN_CHECK(half || job.dynamic || job.calib_dir.empty() != (job.calib_random == 0),
             "kiln quantize: give exactly one of --calib DIR and --calib-random N (or --dynamic)");
  job.seed = static_cast<uint64_t>(a.get_int("--seed", 1));
  ShapeFlags flags = parse_shape_flags(a);
  job.inputs = flags.spec;
  job.cache_dir = a.get_or("--cache-dir", "");
  job.eval_dir = a.get_or("--eval", "");
  job.eval_random = static_cast<int>(a.get_int("--eval-random", 4));
  KILN_CHECK(job.eval_random > 0, "--eval-random ", job.eval_random, ": expected a positive count");
  if (auto b = a.get("--accuracy-budget")) {
    char* end = nullptr;
    double v = std::strtod(b->c_str(), &end);
    KILN_CHECK(end && *end == '\0' && !b->empty() && v >= 0 && std::isfinite(v), "--accuracy-budget ", *b,
               ": expected a non-negative number (accuracy points with --eval labels, else (1 - cosine) x 100)");
    KILN_CHECK(!job.dynamic, "--accuracy-budget applies to static quantization, not --dynamic");
    KILN_CHECK(job.precision == "int8", "--accuracy-budget applies to int8 quantization, not --precision ",
               job.precision);
    job.accuracy_budget = v;
    job.budget_metric = a.get_or("--budget-metric", "auto");
  }
  KILN_CHECK(job.accuracy_budget || !a.get("--budget-metric"), "--budget-metric needs --accuracy-budget X");
  const bool quiet = a.has("--quiet");
  job.log = quiet ? nullptr : &std::cerr;

  compress::QuantizeResult r = compress::quantize_file(job);
  if (!quiet)
    for (const auto& line : r.lines) std::printf("  %s\n", line.c_str());
  if (r.budget && !quiet) std::fputs(compress::format_budget_plan(*r.budget).c_str(), stdout);
  std::fprintf(stderr, "wrote %s (%.2f s%s)\n", job.out_path.c_str(), r.total_seconds,
               r.random_calibration ? ", calibrated on random data" : "");

  if (a.has("--report") || a.has("--json") || a.has("--eval")) {
    compress::ReportJob rj;
    rj.job = &job;
    rj.result = &r;
    rj.eval_dir = job.eval_dir;
    rj.eval_random = job.eval_random;
    rj.runs = static_cast<int>(a.get_int("--runs", 20));
    rj.kiln_exe = "/proc/self/exe";
    compress::Report rep = compress::make_report(rj);
    if (a.has("--report") || !a.has("--json")) std::fputs(compress::format_report(rep).c_str(), stdout);
    if (auto path = a.get("--json")) compress::write_report_json(rep, *path);
  }
  return 0;
}

}  // namespace kiln::cli
