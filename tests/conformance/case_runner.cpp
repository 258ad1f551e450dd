#include "conformance/case_runner.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::conformance {
namespace fs = std::filesystem;

CaseMeta read_meta(const fs::path& case_dir) {
  std::ifstream in(case_dir / "meta.txt");
  KILN_CHECK(in.good(), "conformance: cannot read ", (case_dir / "meta.txt").string());
  CaseMeta m;
  std::string key;
  while (in >> key) {
    if (key == "op") in >> m.op;
    else if (key == "opset") in >> m.opset;
    else if (key == "atol") in >> m.atol;
    else if (key == "rtol") in >> m.rtol;
    else KILN_CHECK(false, "conformance: unknown key '", key, "' in ", (case_dir / "meta.txt").string());
  }
  KILN_CHECK(!m.op.empty(), "conformance: no op in ", (case_dir / "meta.txt").string());
  return m;
}

namespace {

bool same_float(double got, double ref, double atol, double rtol) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (std::isinf(ref) || std::isinf(got)) return got == ref;
  return std::fabs(got - ref) <= atol + rtol * std::fabs(ref);
}

// Compares values; returns "" when they match, else a line naming the first mismatch,
// the number of mismatches and (for floats) the largest difference.
std::string compare_values(const Tensor& got, const Tensor& ref, const CaseMeta& meta) {
  const bool is_float = dtype_is_float(ref.dtype());
  // f16/bf16 results are compared to within one unit in the last place of f16 (2^-10).
  const double rtol = ref.dtype() == DType::f16 || ref.dtype() == DType::bf16 ? std::max(meta.rtol, 1.0 / 1024)
                                                                             : meta.rtol;
  int64_t bad = 0, first = -1;
  double max_diff = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    bool ok;
    if (is_float) {
      double g = got.as_double(i), r = ref.as_double(i);
      ok = same_float(g, r, meta.atol, rtol);
      if (!std::isnan(g) && !std::isnan(r) && !std::isinf(g) && !std::isinf(r))
        max_diff = std::max(max_diff, std::fabs(g - r));
    } else {
      ok = got.as_int64(i) == ref.as_int64(i);
    }
    if (!ok && bad++ == 0) first = i;
  }
  if (bad == 0) return "";
  std::ostringstream os;
  os.precision(9);
  os << bad << " of " << ref.numel() << " values differ; first at flat index " << first << ": kiln ";
  if (is_float)
    os << got.as_double(first) << ", ort " << ref.as_double(first) << " (max |diff| " << max_diff
       << ", tolerance " << meta.atol << " + " << rtol << "*|ort|)";
  else
    os << got.as_int64(first) << ", ort " << ref.as_int64(first);
  return os.str();
}

// Shape inference ran at import; where it claims to know the output's rank or dims, they
// must be the ones the kernel produced.
std::string check_inferred(const Value& v, const Tensor& got) {
  if (v.dtype != DType::undefined && v.dtype != got.dtype())
    return str_cat("inferred dtype ", dtype_name(v.dtype), " but kernel produced ", dtype_name(got.dtype()));
  if (!v.shape.rank_known) return "";
  bool ok = v.shape.rank() == got.rank();
  for (size_t d = 0; ok && d < got.rank(); ++d)
    ok = !v.shape[d].is_static() || v.shape[d].value == got.dim(d);
  if (ok) return "";
  return str_cat("inferred shape ", v.shape.str(), " but kernel produced ", dims_str(got.dims()));
}

}  // namespace

std::vector<std::string> run_case(const fs::path& case_dir, const CaseMeta& meta) {
  std::vector<std::string> problems;
  Model model;
  try {
    model = import_onnx((case_dir / "model.onnx").string());
  } catch (const std::exception& e) {
    return {str_cat("import failed: ", e.what())};
  }

  std::map<std::string, Tensor> inputs;
  for (const Value* in : model.graph->inputs) {
    try {
      inputs[in->name] = read_npy((case_dir / "inputs" / (in->name + ".npy")).string());
    } catch (const std::exception& e) {
      return {str_cat("input '", in->name, "': ", e.what())};
    }
  }

  std::map<std::string, Tensor> outputs;
  try {
    // Two threads: exercises the parallel path without crowding a shared machine.
    outputs = run_model(model, inputs, RunOptions{.threads = 2});
  } catch (const std::exception& e) {
    return {str_cat("run failed: ", e.what())};
  }

  for (const Value* out : model.graph->outputs) {
    const std::string where = str_cat("output '", out->name, "': ");
    fs::path ref_path = case_dir / "ort" / (out->name + ".npy");
    if (!fs::exists(ref_path)) {
      problems.push_back(where + "ORT produced no such output");
      continue;
    }
    auto it = outputs.find(out->name);
    if (it == outputs.end() || !it->second.defined()) {
      problems.push_back(where + "kiln produced no value");
      continue;
    }
    const Tensor& got = it->second;
    Tensor ref;
    try {
      ref = read_npy(ref_path.string());
    } catch (const std::exception& e) {
      problems.push_back(where + e.what());
      continue;
    }
    if (got.dtype() != ref.dtype()) {
      problems.push_back(str_cat(where, "dtype ", dtype_name(got.dtype()), ", ORT ", dtype_name(ref.dtype())));
      continue;
    }
    if (got.dims() != ref.dims()) {
      problems.push_back(str_cat(where, "shape ", dims_str(got.dims()), ", ORT ", dims_str(ref.dims())));
      continue;
    }
    if (std::string diff = compare_values(got, ref, meta); !diff.empty()) problems.push_back(where + diff);
    if (std::string inf = check_inferred(*out, got); !inf.empty()) problems.push_back(where + inf);
  }
  for (const auto& [name, t] : outputs) {
    bool declared = std::any_of(model.graph->outputs.begin(), model.graph->outputs.end(),
                                [&](const Value* v) { return v->name == name; });
    if (!declared) problems.push_back(str_cat("kiln returned undeclared output '", name, "'"));
  }
  return problems;
}

}  // namespace kiln::conformance
