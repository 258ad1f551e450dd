// kiln perf: what a model (or an LLM shape) would do on a chip at each batch size.
#include <cstdio>
#include <cstring>

#include "common.h"
#include "kiln/analysis/chip.h"
#include "kiln/analysis/llm_model.h"
#include "kiln/analysis/perf_diagnose.h"
#include "kiln/analysis/perf_model.h"
#include "kiln/ir/error.h"
#include "kiln/runtime/artifact.h"
#include "verbs.h"

namespace kiln::cli {

namespace {

std::vector<int64_t> parse_list(const std::string& flag, const std::string& s) {
  std::vector<int64_t> out = parse_dims(flag, s);
  for (int64_t v : out) KILN_CHECK(v >= 1, flag, ": values must be at least 1, got ", v);
  return out;
}

double parse_positive(const std::string& flag, const std::string& s) {
  char* end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  KILN_CHECK(!s.empty() && end && *end == '\0' && v > 0, flag, ": '", s, "' is not a positive number");
  return v;
}

// `--dim NAME` (no '=') names the batch dim; `--dim NAME=N` fixes another dim as in every
// verb. The first kind is taken out before the shared flag parser sees the arguments.
std::vector<char*> split_batch_dim(int argc, char** argv, std::string& batch_dim) {
  std::vector<char*> rest;
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    std::string value;
    bool is_dim = false;
    if (a == "--dim" && i + 1 < argc) {
      value = argv[i + 1];
      is_dim = true;
    } else if (a.rfind("--dim=", 0) == 0) {
      value = a.substr(6);
    }
    if (!value.empty() && value.find('=') == std::string::npos) {
      KILN_CHECK(batch_dim.empty() || batch_dim == value, "--dim: two batch dims named (", batch_dim, ", ", value, ")");
      batch_dim = value;
      if (is_dim) ++i;
      continue;
    }
    rest.push_back(argv[i]);
  }
  return rest;
}

// --llm SPEC (layers=..,hidden=..) or --llm MODEL (counted from an ONNX decoder).
int llm_mode(const Args& a, const analysis::Chip& chip) {
  KILN_CHECK(a.positional().empty(), "kiln perf --llm: takes no MODEL argument (give it as --llm MODEL)");
  for (const char* f : {"--max-latency", "--svg", "--measured"})
    KILN_CHECK(!a.has(f), "kiln perf: ", f, " is not available in --llm mode");
  std::string spec = *a.get("--llm");
  analysis::LlmConfig cfg = spec.find('=') != std::string::npos
                                ? analysis::parse_llm_spec(spec)
                                : analysis::llm_config_from_model(load_model(spec, parse_shape_flags(a)));
  analysis::LlmOptions opt;
  opt.context = parse_list("--context", a.get_or("--context", "2048")).at(0);
  opt.batches = parse_list("--batch", a.get_or("--batch", "1"));
  opt.tp = parse_list("--tp", a.get_or("--tp", "1"));
  opt.precision = analysis::precision_from_name(a.get_or("--precision", "bf16"));
  opt.link = a.get_or("--link", "");
  analysis::LlmReport r = analysis::llm_predict(cfg, chip, opt);
  std::string out = a.has("--json") ? analysis::llm_to_json(r) : analysis::llm_to_text(r);
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

int verb_perf(int argc, char** argv) {
  std::string batch_dim;
  std::vector<char*> args = split_batch_dim(argc, argv, batch_dim);
  Args a("perf", static_cast<int>(args.size()), args.data(),
         {"--chip", "--batch", "--precision", "--max-latency", "--svg", "--dim", "--shape", "--measured", "--cache",
          "--llm", "--context", "--tp", "--link", "--threads"},
         {"--json"});
  KILN_CHECK(a.has("--chip"), "kiln perf: --chip is required (h100, a100, l4, orin, cpu or FILE.json)");
  analysis::Chip chip = analysis::resolve_chip(*a.get("--chip"), analysis::default_chip_dirs(), a.get_or("--cache", ""));
  if (a.has("--threads")) {  // kiln's runtime on that many threads of this machine
    KILN_CHECK(chip.id == "cpu" && chip.machine, "kiln perf: --threads goes with --chip cpu");
    chip = analysis::chip_from_machine(*chip.machine, static_cast<int>(a.get_int("--threads", 1)));
  }
  if (a.has("--llm")) return llm_mode(a, chip);
  for (const char* f : {"--context", "--tp", "--link"})
    KILN_CHECK(!a.has(f), "kiln perf: ", f, " belongs to --llm mode");
  KILN_CHECK(a.positional().size() == 1, "kiln perf: expected one MODEL argument (or --llm)");
  analysis::PerfOptions opt;
  opt.precision = analysis::precision_from_name(a.get_or("--precision", "fp32"));
  opt.batch_dim = batch_dim;
  std::vector<int64_t> batches = parse_list("--batch", a.get_or("--batch", "1"));
  // Without --batch, the table shows the batch the measurement was taken at (--measured MS@B).
  if (auto s = a.get("--measured"); s && !a.has("--batch"))
    batches = {analysis::parse_measured(*s, batches.front()).second};
  std::optional<double> max_latency;
  if (auto s = a.get("--max-latency")) max_latency = parse_positive("--max-latency", *s);

  // A compiled artifact is costed as compiled: its optimized graph, kernel by kernel.
  const std::string& path = a.positional()[0];
  Model m = is_artifact_file(path) ? read_artifact(path).model : load_model(path, parse_shape_flags(a));
  if (is_artifact_file(path)) ops::specialize_inputs(m, parse_shape_flags(a).spec);
  analysis::PerfReport report = analysis::predict(m, batches, chip, opt, max_latency);
  std::optional<analysis::Diagnosis> diag;
  if (auto s = a.get("--measured")) {
    auto [ms, batch] = analysis::parse_measured(*s, batches.front());
    diag = analysis::diagnose(m, chip, opt, ms, batch);
  }
  std::string out;
  if (a.has("--json")) {
    out = analysis::perf_to_json(report, diag ? &*diag : nullptr);
  } else {
    out = analysis::perf_to_text(report);
    if (diag) out += "\n" + analysis::diagnosis_to_text(*diag);
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
  if (auto svg = a.get("--svg")) {
    write_file(*svg, analysis::perf_to_svg(report));
    std::fflush(stdout);
    std::fprintf(stderr, "wrote %s\n", svg->c_str());
  }
  return 0;
}

}  // namespace kiln::cli
