#include "codegen/codegen_test_util.h"

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "kiln/ir/text.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::codegen::test {

LoadedLibrary::LoadedLibrary(const std::string& path) {
  handle_ = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(handle_ != nullptr, "dlopen ", path, ": ", ::dlerror());
}

LoadedLibrary::~LoadedLibrary() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

void* LoadedLibrary::symbol(const std::string& name) const {
  void* p = ::dlsym(handle_, name.c_str());
  KILN_CHECK(p != nullptr, "symbol ", name, " not found in the kernel library");
  return p;
}

CallLayout broadcast_layout(const std::vector<std::vector<int64_t>>& input_dims) {
  CallLayout l;
  size_t rank = 0;
  for (const auto& d : input_dims) rank = std::max(rank, d.size());
  l.out_dims.assign(rank, 1);
  for (const auto& d : input_dims)
    for (size_t k = 0; k < d.size(); ++k) {
      int64_t& o = l.out_dims[rank - d.size() + k];
      KILN_CHECK(d[k] == 1 || o == 1 || d[k] == o, "shapes do not broadcast");
      if (d[k] != 1) o = d[k];
    }
  for (const auto& d : input_dims) {
    std::vector<int64_t> s(rank, 0);
    int64_t stride = 1;
    for (size_t k = d.size(); k-- > 0;) {
      if (d[k] != 1) s[rank - d.size() + k] = stride;
      stride *= d[k];
    }
    l.strides.push_back(std::move(s));
  }
  return l;
}

std::vector<Tensor> call_kernel(kiln_fused_fn fn, const std::vector<const void*>& inputs, const CallLayout& layout,
                                const std::vector<DType>& out_dtypes, const std::vector<int64_t>& cuts) {
  std::vector<Tensor> outs;
  std::vector<void*> out_ptrs;
  for (DType t : out_dtypes) {
    outs.emplace_back(t, layout.out_dims);
    out_ptrs.push_back(outs.back().raw());
  }
  std::vector<const int64_t*> strides;
  for (const auto& s : layout.strides) strides.push_back(s.data());
  kiln_fused_args args{inputs.data(), out_ptrs.data(), layout.out_dims.data(), strides.data(),
                       static_cast<int32_t>(layout.out_dims.size())};
  const int64_t total = numel_of(layout.out_dims);
  int64_t begin = 0;
  for (int64_t c : cuts) {
    if (c <= begin || c >= total) continue;
    fn(&args, begin, c);
    begin = c;
  }
  fn(&args, begin, total);
  return outs;
}

std::vector<Tensor> call_kernel(kiln_fused_fn fn, const std::vector<Tensor>& inputs, const std::vector<DType>& out_dtypes,
                                const std::vector<int64_t>& cuts) {
  std::vector<std::vector<int64_t>> dims;
  std::vector<const void*> ptrs;
  for (const Tensor& t : inputs) {
    dims.push_back(t.dims());
    ptrs.push_back(t.raw());
  }
  return call_kernel(fn, ptrs, broadcast_layout(dims), out_dtypes, cuts);
}

std::vector<Tensor> run_body(const Node& fused, const std::vector<Tensor>& inputs) {
  Model m;
  m.graph = fused.find_attr("body")->g();
  m.opsets[""] = 17;
  std::map<std::string, Tensor> feeds;
  for (size_t i = 0; i < inputs.size(); ++i) feeds[m.graph->inputs[i]->name] = inputs[i];
  std::map<std::string, Tensor> outs = run_model(m, feeds);
  std::vector<Tensor> r;
  for (const Value* v : m.graph->outputs) r.push_back(outs.at(v->name));
  return r;
}

Model fused_model(const std::vector<std::string>& inputs, const std::string& body, int outputs) {
  std::string outer_in, outer_args, body_in, body_out, outer_out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const char* sep = i == 0 ? "" : ", ";
    outer_in += str_cat(sep, "%a", i, ": ", inputs[i]);
    outer_args += str_cat(sep, "%a", i);
    body_in += str_cat(sep, "%x", i, ": ", inputs[i]);
  }
  for (int k = 0; k < outputs; ++k) {
    body_out += str_cat(k == 0 ? "" : ", ", "%r", k);
    outer_out += str_cat(k == 0 ? "" : ", ", "%y", k);
  }
  std::string text = str_cat("graph main(", outer_in, ") -> (", outer_out, ") {\n  ", outer_out,
                             " = kiln::FusedElementwise(", outer_args, ") {body=graph body(", body_in, ") -> (", body_out,
                             ") {\n", body, "\n  }}\n}\n");
  return parse_model(text);
}

const Node& fused_node(const Model& m) {
  for (const auto& n : m.graph->nodes())
    if (n->op == "FusedElementwise") return *n;
  throw Error("no FusedElementwise node in the model");
}

const char* const kGeluErfBody = R"(
    %s = init f32[] dense<1.41421353816986083984375>
    %one = init f32[] dense<1.0>
    %half = init f32[] dense<0.5>
    %d = Div(%x0, %s)
    %e = Erf(%d)
    %p = Add(%e, %one)
    %m = Mul(%x0, %p)
    %r0 = Mul(%m, %half))";

std::string test_cache_dir() { return str_cat(KILN_BINARY_DIR, "/codegen-test/cache"); }

std::string fresh_dir(const std::string& name) {
  std::filesystem::path p = std::filesystem::path(KILN_BINARY_DIR) / "codegen-test" / name;
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

std::string compare(const Tensor& got, const Tensor& want, double atol, double rtol) {
  if (got.dtype() != want.dtype())
    return str_cat("dtype ", dtype_name(got.dtype()), ", want ", dtype_name(want.dtype()));
  if (got.dims() != want.dims()) return str_cat("dims ", dims_str(got.dims()), ", want ", dims_str(want.dims()));
  const bool exact = atol == 0 && rtol == 0;
  const size_t esize = dtype_size(got.dtype());
  for (int64_t i = 0; i < got.numel(); ++i) {
    const double g = got.as_double(i), w = want.as_double(i);
    bool ok;
    if (exact) {
      // Bits, except that any NaN matches any NaN.
      ok = std::memcmp(static_cast<const char*>(got.raw()) + i * esize, static_cast<const char*>(want.raw()) + i * esize,
                       esize) == 0 ||
           (std::isnan(g) && std::isnan(w));
    } else if (std::isnan(w) || std::isinf(w)) {
      ok = (std::isnan(g) && std::isnan(w)) || g == w;
    } else {
      ok = std::abs(g - w) <= atol + rtol * std::abs(w);
    }
    if (!ok) return str_cat("element ", i, ": got ", g, ", want ", w, " (|diff| ", std::abs(g - w), ")");
  }
  return "";
}

}  // namespace kiln::codegen::test
