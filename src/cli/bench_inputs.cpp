#include "bench_inputs.h"

#include <cstring>
#include <filesystem>
#include <random>

#include "common.h"
#include "kiln/ir/npy.h"

namespace kiln::cli {
namespace {

// The input's dims with every symbol bound; an error tells the user which flag fixes it.
std::vector<int64_t> concrete_dims(const Value& v, const DimBindings& dims) {
  KILN_CHECK(v.shape.rank_known, "input '", v.name, "' has unknown rank: give --shape ", v.name,
             "=d0,d1,... or --input ", v.name, "=FILE.npy");
  Shape s = bind_dims(v.shape, dims);
  for (const Dim& d : s.dims) {
    KILN_CHECK(!d.is_symbolic(), "input '", v.name, "' has dynamic dim '", d.symbol, "' (shape ", v.shape.str(),
               "): give --dim ", d.symbol, "=SIZE, --batch SIZE, or --input ", v.name, "=FILE.npy");
    KILN_CHECK(d.is_static(), "input '", v.name, "' has an unknown dim (shape ", v.shape.str(), "): give --shape ",
               v.name, "=... or --input ", v.name, "=FILE.npy");
  }
  return s.static_dims();
}

template <typename T, typename Dist>
void fill(Tensor& t, Dist dist, std::mt19937_64& rng) {
  T* p = t.data<T>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<T>(dist(rng));
}

Tensor random_input(const Value& v, const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  Tensor t(v.dtype, dims);
  switch (v.dtype) {
    case DType::f32: fill<float>(t, std::uniform_real_distribution<float>(-1.f, 1.f), rng); break;
    case DType::f64: fill<double>(t, std::uniform_real_distribution<double>(-1., 1.), rng); break;
    case DType::f16:
    case DType::bf16: {
      Tensor f(DType::f32, dims);
      fill<float>(f, std::uniform_real_distribution<float>(-1.f, 1.f), rng);
      return f.cast(v.dtype);
    }
    case DType::boolean: fill<bool>(t, std::uniform_int_distribution<int>(0, 1), rng); break;
    default: {
      KILN_CHECK(dtype_is_integer(v.dtype), "input '", v.name, "': cannot make random ", dtype_name(v.dtype),
                 " values; give --input ", v.name, "=FILE.npy");
      // [0, 100) fits every integer dtype and is a valid id / index for most vocabularies.
      Tensor i64(DType::i64, dims);
      fill<int64_t>(i64, std::uniform_int_distribution<int64_t>(0, 99), rng);
      return v.dtype == DType::i64 ? i64 : i64.cast(v.dtype);
    }
  }
  return t;
}

// Rows 0..batch-1 of `t` along dim 0, cycling when `t` has fewer.
Tensor with_batch(const Tensor& t, int64_t batch, const std::string& what) {
  KILN_CHECK(t.rank() >= 1 && t.dim(0) > 0, what, " has no leading dim to take --batch ", batch, " from");
  if (t.dim(0) == batch) return t;
  std::vector<int64_t> dims = t.dims();
  size_t row = t.nbytes() / static_cast<size_t>(dims[0]);
  int64_t rows = dims[0];
  dims[0] = batch;
  Tensor out(t.dtype(), dims);
  for (int64_t i = 0; i < batch; ++i)
    std::memcpy(static_cast<char*>(out.raw()) + static_cast<size_t>(i) * row,
                static_cast<const char*>(t.raw()) + static_cast<size_t>(i % rows) * row, row);
  return out;
}

std::string describe(const std::string& name, const Tensor& t, const std::string& origin) {
  return str_cat(name, " ", dtype_name(t.dtype()), dims_str(t.dims()), " ", origin);
}

}  // namespace

DimBindings batch_bindings(const Graph& g, int64_t batch) {
  KILN_CHECK(batch >= 1, "--batch must be >= 1");
  DimBindings b;
  for (const Value* v : g.inputs) {
    if (v->initializer || !v->shape.rank_known || v->shape.rank() == 0) continue;
    const Dim& d = v->shape[0];
    KILN_CHECK(!d.is_static() || d.value == batch, "--batch ", batch, ": input '", v->name, "' has a static leading dim ",
               d.value, " (shape ", v->shape.str(), ")");
    if (d.is_symbolic()) b[d.symbol] = batch;
  }
  return b;
}

BenchInputs make_bench_inputs(const Graph& g, const InputRequest& req) {
  for (const auto& [name, file] : req.files) {
    bool known = false;
    for (const Value* v : g.inputs) known |= v->name == name && !v->initializer;
    KILN_CHECK(known, "--input ", name, ": the model has no input named '", name, "'");
  }
  BenchInputs out;
  std::mt19937_64 rng(req.seed);
  bool batch_seen = false;
  for (const Value* v : g.inputs) {
    if (v->initializer) continue;
    std::string file, origin;
    if (auto f = req.files.find(v->name); f != req.files.end()) {
      file = f->second;
    } else {
      for (const auto& dir : req.zoo_dirs) {
        std::string candidate = dir + "/inputs/" + sanitize_name(v->name) + ".npy";
        if (std::filesystem::is_regular_file(candidate)) {
          file = candidate;
          break;
        }
      }
    }
    Tensor t;
    bool batched = v->shape.rank_known && v->shape.rank() > 0;
    if (!file.empty()) {
      t = read_npy(file);
      origin = "from " + file;
      if (req.batch && batched && t.rank() >= 1 && t.dim(0) != *req.batch) {
        origin += str_cat(" (", t.dim(0), " rows cycled to --batch ", *req.batch, ")");
        t = with_batch(t, *req.batch, "input '" + v->name + "' from " + file);
      }
    } else {
      t = random_input(*v, concrete_dims(*v, req.dims), rng);
      origin = dtype_is_integer(v->dtype) ? "random in [0, 100)" : "random";
      out.random_integers |= dtype_is_integer(v->dtype);
    }
    if (!batch_seen && t.rank() >= 1) {
      out.batch = t.dim(0);
      batch_seen = true;
    }
    out.origins.push_back(describe(v->name, t, origin));
    out.tensors[v->name] = std::move(t);
  }
  return out;
}

}  // namespace kiln::cli
