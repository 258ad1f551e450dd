// kiln run MODEL: runs the reference interpreter on .npy or random inputs; an artifact from
// `kiln compile` (model.kiln) runs through the compiled runtime with the same flags.
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <random>

#include "common.h"
#include "kiln/analysis/compare.h"
#include "kiln/ir/npy.h"
#include "kiln/kernels/parallel.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

// `shape` is v's declared shape with the --dim/--shape flags applied.
Tensor random_tensor(const Value& v, const Shape& shape, std::mt19937_64& rng) {
  KILN_CHECK(shape.rank_known, "input '", v.name, "' has unknown rank; give its shape with --shape ", v.name,
             "=d0,d1,...");
  for (const Dim& d : shape.dims) {
    KILN_CHECK(!d.is_symbolic(), "input '", v.name, "' has dynamic dim '", d.symbol, "' (shape ", shape.str(),
               "); give it a size with --dim ", d.symbol, "=N or --shape ", v.name, "=...");
    KILN_CHECK(d.is_static(), "input '", v.name, "' has an unknown dim (shape ", shape.str(), "); give --shape ",
               v.name, "=...");
  }
  Tensor t(v.dtype, shape.static_dims());
  int64_t n = t.numel();
  std::uniform_real_distribution<float> uf(-1.f, 1.f);
  std::uniform_int_distribution<int> ui(0, 9);
  // Floats uniform in [-1, 1); integers in [0, 10) (valid token ids / indices for most models); bools 50/50.
  Tensor f32(DType::f32, t.dims());
  float* p = f32.data<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = dtype_is_float(v.dtype) ? uf(rng) : static_cast<float>(ui(rng) % (v.dtype == DType::boolean ? 2 : 10));
  return v.dtype == DType::f32 ? f32 : f32.cast(v.dtype);
}

void print_summary(const std::string& name, const Tensor& t) {
  std::printf("  %-24s %-5s %-18s", name.c_str(), std::string(dtype_name(t.dtype())).c_str(),
              dims_str(t.dims()).c_str());
  if (t.numel() == 0) {
    std::printf(" (empty)\n");
    return;
  }
  double mn = t.as_double(0), mx = mn, sum = 0;
  for (int64_t i = 0; i < t.numel(); ++i) {
    double x = t.as_double(i);
    mn = std::min(mn, x);
    mx = std::max(mx, x);
    sum += x;
  }
  std::printf(" min=%-12.6g max=%-12.6g mean=%.6g\n", mn, mx, sum / static_cast<double>(t.numel()));
}

}  // namespace

int verb_run(int argc, char** argv) {
  Args a("run", argc, argv,
         {"--input", "--seed", "--out", "--threads", "--dim", "--shape", "--expect", "--rtol", "--atol", "--repeat",
          "--idle-spin-ms"},
         {"--random", "--quiet"});
  KILN_CHECK(a.positional().size() == 1, "kiln run: expected one MODEL argument (kiln run MODEL [--input NAME=FILE.npy ...])");
  ShapeFlags sf = parse_shape_flags(a);
  const std::string& path = a.positional()[0];
  // An artifact keeps its symbolic dims (the runtime plans each input shape); the flags only
  // size random inputs. Any other model is specialised by them as usual.
  std::unique_ptr<Executable> exe;
  Model m;
  if (is_artifact_file(path) || path.ends_with(".kiln")) exe = Executable::load(path);
  else m = load_model(path, sf);
  const Graph& g = exe ? *exe->model().graph : *m.graph;
  const char* engine = exe ? "compiled" : "reference interpreter";

  std::map<std::string, Tensor> inputs;
  for (const auto& s : a.all("--input")) {
    auto [name, file] = split_assignment("--input", s);
    bool known = false;
    for (const Value* v : g.inputs) known |= v->name == name;
    KILN_CHECK(known, "--input ", name, ": the model has no input named '", name, "'");
    inputs[name] = read_npy(file);
  }
  std::mt19937_64 rng(static_cast<uint64_t>(a.get_int("--seed", 0)));
  for (const Value* v : g.inputs) {
    if (inputs.count(v->name) || v->initializer) continue;
    KILN_CHECK(a.has("--random"), "missing input '", v->name, "' (", dtype_name(v->dtype), v->shape.str(),
               "): give --input ", v->name, "=FILE.npy, or --random");
    auto fixed = sf.spec.shapes.find(v->name);
    Shape shape = fixed != sf.spec.shapes.end() ? Shape::of(fixed->second) : bind_dims(v->shape, sf.spec.dims);
    inputs[v->name] = random_tensor(*v, shape, rng);
  }
  RunOptions opt;
  opt.threads = static_cast<int>(a.get_int("--threads", 0));
  apply_idle_spin_flag(a);
  KILN_CHECK(opt.threads >= 0, "--threads must be >= 0");
  int64_t repeat = a.get_int("--repeat", 1);
  KILN_CHECK(repeat >= 1, "--repeat must be >= 1");
  // With --repeat N: one warm-up run, then N timed runs; the median and p90 are reported.
  std::vector<double> times;
  std::map<std::string, Tensor> outputs;
  for (int64_t i = 0; i < (repeat > 1 ? repeat + 1 : 1); ++i) {
    auto t0 = std::chrono::steady_clock::now();
    outputs = exe ? exe->run(inputs, opt) : run_model(m, inputs, opt, sf.ranges);
    double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (repeat == 1 || i > 0) times.push_back(ms);
  }
  std::sort(times.begin(), times.end());
  double ms = times[times.size() / 2];
  double p90 = times[std::min(times.size() - 1, times.size() * 9 / 10)];
  bool quiet = a.has("--quiet");
  if (repeat > 1)
    std::printf("timing: %lld runs after 1 warm-up, median %.2f ms, p90 %.2f ms (%s, %d threads)\n",
                static_cast<long long>(repeat), ms, p90, engine, opt.threads > 0 ? opt.threads : kernels::hardware_threads());
  if (!quiet) {
    std::printf("inputs:\n");
    for (const auto& [name, t] : inputs) print_summary(name, t);
    std::printf("outputs (%.1f ms, %s):\n", ms, engine);
  }
  for (const Value* v : g.outputs)
    if (!quiet) print_summary(v->name, outputs.at(v->name));

  if (auto dir = a.get("--out")) {
    make_dirs(*dir);
    for (const auto& [name, t] : outputs) write_npy(*dir + "/" + sanitize_name(name) + ".npy", t);
    for (const auto& [name, t] : inputs)
      if (a.has("--random")) write_npy(*dir + "/input." + sanitize_name(name) + ".npy", t);
  }
  int rc = 0;
  if (auto dir = a.get("--expect")) {
    double rtol = std::stod(a.get_or("--rtol", "1e-4")), atol = std::stod(a.get_or("--atol", "0"));
    std::printf("check against %s (max|diff| <= %g*max|ref| + %g):\n", dir->c_str(), rtol, atol);
    for (const Value* v : g.outputs) {
      Tensor ref = read_npy(*dir + "/" + sanitize_name(v->name) + ".npy");
      Comparison c = compare_tensors(outputs.at(v->name), ref, rtol, atol);
      std::printf("  %-24s %s %s\n", v->name.c_str(), c.ok ? "ok  " : "FAIL", c.str().c_str());
      if (!c.same_shape)
        std::printf("    shape %s vs reference %s\n", dims_str(outputs.at(v->name).dims()).c_str(), dims_str(ref.dims()).c_str());
      if (!c.ok) rc = 1;
    }
    if (rc) std::fprintf(stderr, "kiln: outputs differ from the reference in %s\n", dir->c_str());
  }
  return rc;
}

}  // namespace kiln::cli
