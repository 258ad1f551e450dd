#include "zoo/zoo_parity.h"

#include <chrono>
#include <cmath>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::zoo {
namespace fs = std::filesystem;

fs::path model_dir(const std::string& model) { return fs::path(KILN_BINARY_DIR) / "zoo" / model; }

std::string sanitize(const std::string& name) {
  std::string s = name;
  for (char& c : s) {
    bool keep = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '_' || c == '-';
    if (!keep) c = '_';
  }
  return s;
}

std::map<std::string, Tensor> read_inputs(const fs::path& dir) {
  KILN_CHECK(fs::is_directory(dir / "inputs"), "zoo: no ", (dir / "inputs").string(),
             " (run: bash scripts/zoo/prepare.sh ", KILN_BINARY_DIR, ")");
  std::map<std::string, Tensor> inputs;
  for (const auto& e : fs::directory_iterator(dir / "inputs")) {
    if (e.path().extension() == ".npy") inputs[e.path().stem().string()] = read_npy(e.path().string());
  }
  KILN_CHECK(!inputs.empty(), "zoo: no .npy files in ", (dir / "inputs").string());
  return inputs;
}

OutputDiff compare(const std::string& name, const Tensor& got, const Tensor& ref) {
  OutputDiff d;
  d.name = name;
  d.same_shape = got.defined() && got.dtype() == ref.dtype() && got.dims() == ref.dims();
  if (!d.same_shape) return d;
  // Accumulate in double: the outputs have up to 6.4M elements (GPT-2 logits).
  double dot = 0, got_sq = 0, ref_sq = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double g = got.as_double(i), r = ref.as_double(i);
    double diff;
    if (std::isnan(g) || std::isnan(r)) diff = std::isnan(g) && std::isnan(r) ? 0 : INFINITY;
    else if (g == r) diff = 0;      // also equal infinities
    else diff = std::fabs(g - r);   // inf when only one side is infinite
    d.max_abs_diff = std::max(d.max_abs_diff, diff);
    if (std::isfinite(r)) d.max_abs_ref = std::max(d.max_abs_ref, std::fabs(r));
    if (std::isfinite(g) && std::isfinite(r)) {
      dot += g * r;
      got_sq += g * g;
      ref_sq += r * r;
    }
  }
  d.cosine = got_sq > 0 && ref_sq > 0 ? dot / std::sqrt(got_sq * ref_sq) : (got_sq == ref_sq ? 1.0 : 0.0);
  return d;
}

namespace {
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

ParityRun run_parity(const fs::path& dir) {
  return run_parity_with(dir, [](const Model& model, const std::map<std::string, Tensor>& inputs) {
    return run_model(model, inputs);
  });
}

ParityRun run_parity_with(const fs::path& dir, const Runner& runner) {
  const fs::path model_path = dir / "model.onnx";
  KILN_CHECK(fs::exists(model_path), "zoo: no ", model_path.string(), " (run: bash scripts/zoo/prepare.sh ",
             KILN_BINARY_DIR, ")");
  KILN_CHECK(fs::is_directory(dir / "ort"), "zoo: no ORT outputs in ", (dir / "ort").string());
  ParityRun run;
  for (const auto& e : fs::directory_iterator(dir / "ort")) run.ort_files += e.path().extension() == ".npy";

  auto t0 = std::chrono::steady_clock::now();
  Model model = import_onnx(model_path.string());
  run.import_ms = ms_since(t0);
  std::map<std::string, Tensor> inputs = read_inputs(dir);

  t0 = std::chrono::steady_clock::now();
  run.kiln_outputs = runner(model, inputs);
  run.run_ms = ms_since(t0);

  for (const Value* out : model.graph->outputs) {
    fs::path ref_path = dir / "ort" / (sanitize(out->name) + ".npy");
    KILN_CHECK(fs::exists(ref_path), "zoo: no ORT output ", ref_path.string(), " for graph output '", out->name,
               "'");
    auto it = run.kiln_outputs.find(out->name);
    Tensor got = it == run.kiln_outputs.end() ? Tensor() : it->second;
    run.outputs.push_back(compare(out->name, got, read_npy(ref_path.string())));
  }
  return run;
}

}  // namespace kiln::zoo
