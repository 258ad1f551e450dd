// Test helpers for generated kernels: load a built library (dlopen), call a kernel per the ABI
// (fused_abi.h) over chosen ranges, and run the same body through the reference interpreter.
#pragma once
#include <string>
#include <vector>

#include "kiln/codegen/build.h"
#include "kiln/codegen/emit.h"
#include "kiln/codegen/fused_abi.h"
#include "kiln/ir/graph.h"

namespace kiln::codegen::test {

// A shared library opened with dlopen and closed when this goes away.
class LoadedLibrary {
 public:
  explicit LoadedLibrary(const std::string& path);
  ~LoadedLibrary();
  LoadedLibrary(const LoadedLibrary&) = delete;
  LoadedLibrary& operator=(const LoadedLibrary&) = delete;
  void* symbol(const std::string& name) const;  // throws kiln::Error when absent
  kiln_fused_fn kernel(const std::string& name) const { return reinterpret_cast<kiln_fused_fn>(symbol(name)); }

 private:
  void* handle_ = nullptr;
};

// What the runtime passes besides the data: the output dims and each input's strides.
struct CallLayout {
  std::vector<int64_t> out_dims;
  std::vector<std::vector<int64_t>> strides;  // per input, per output dim (0 = broadcast)
};
// Numpy broadcasting of the inputs' dims, with row-major strides for dense inputs.
CallLayout broadcast_layout(const std::vector<std::vector<int64_t>>& input_dims);

// Calls `fn` over [0, total), as consecutive ranges ending at each of `cuts` (then at total),
// the way runtime threads would; inputs are read through `layout`.
std::vector<Tensor> call_kernel(kiln_fused_fn fn, const std::vector<const void*>& inputs, const CallLayout& layout,
                                const std::vector<DType>& out_dtypes, const std::vector<int64_t>& cuts = {});
// Same for dense inputs with broadcast_layout().
std::vector<Tensor> call_kernel(kiln_fused_fn fn, const std::vector<Tensor>& inputs, const std::vector<DType>& out_dtypes,
                                const std::vector<int64_t>& cuts = {});

// The reference: the node's body run as a model by the interpreter (outputs in body order).
std::vector<Tensor> run_body(const Node& fused, const std::vector<Tensor>& inputs);

// A model with one kiln::FusedElementwise node whose body inputs are %x0.. (types `inputs`, e.g.
// "f32[N,4]") and outputs %r0..%r{outputs-1}, computed by `body` (textual IR statements).
Model fused_model(const std::vector<std::string>& inputs, const std::string& body, int outputs = 1);
const Node& fused_node(const Model& m);

// GELU as PyTorch exports it, x * 0.5 * (1 + erf(x / sqrt 2)), reading %x0 into %r0.
extern const char* const kGeluErfBody;

// A cache directory under the build tree shared by the codegen tests.
std::string test_cache_dir();
// A fresh empty directory under the build tree.
std::string fresh_dir(const std::string& name);

// Elementwise comparison: NaN matches NaN, infinities must be equal, otherwise
// |got - want| <= atol + rtol |want|; with atol = rtol = 0 the bits must match (signed zeros too).
// Returns "" or a description of the first mismatch.
std::string compare(const Tensor& got, const Tensor& want, double atol, double rtol);

}  // namespace kiln::codegen::test
