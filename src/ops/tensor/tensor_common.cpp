#include "tensor_common.h"

#include "kiln/kernels/parallel.h"

namespace kiln::ops::tensor_ops {

std::optional<std::vector<int64_t>> const_ints(const InferContext& c, size_t i) {
  const Tensor* t = c.in_const(i);
  if (!t) return std::nullopt;
  if (!dtype_is_integer(t->dtype())) c.fail(str_cat("input ", i, " must be an integer tensor, got ", dtype_name(t->dtype())));
  return t->to_int64_vector();
}

Shape unknown_dims(size_t rank) { return Shape(std::vector<Dim>(rank, Dim::unknown())); }

std::optional<int64_t> static_length(const InferContext& c, size_t i) {
  if (!c.has_input(i)) return std::nullopt;
  const Shape& s = c.in_shape(i);
  if (!s.rank_known || s.rank() != 1 || !s[0].is_static()) return std::nullopt;
  return s[0].value;
}

Dim product_dim(const std::vector<Dim>& dims) {
  int64_t p = 1;
  const Dim* non_static = nullptr;
  int n_non_static = 0;
  for (const Dim& d : dims) {
    if (d.is_static()) {
      p *= d.value;
    } else {
      non_static = &d;
      ++n_non_static;
    }
  }
  if (n_non_static == 0) return Dim(p);
  if (n_non_static == 1 && p == 1) return *non_static;
  return Dim::unknown();
}

void check_dims(const std::vector<int64_t>& dims, const KernelContext& k) {
  constexpr int64_t kMaxElements = int64_t{1} << 40;
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) k.fail(str_cat("negative dim in ", dims_str(dims)));
    if (d != 0 && n > kMaxElements / d) k.fail(str_cat("shape ", dims_str(dims), " is too large"));
    n *= d;
  }
}

void copy_view(KernelContext& k, size_t out, const Tensor& src, int64_t offset, const std::vector<int64_t>& strides,
               const std::vector<int64_t>& dims) {
  Tensor& y = k.alloc_output(out, src.dtype(), dims);
  // Large copies split the outermost dim across threads.
  KILN_DISPATCH_BYTES(src.dtype(), k.node().describe(), {
    kernels::strided_copy_threads<T>(static_cast<const T*>(src.raw()), offset, strides.data(), dims.data(), dims.size(),
                                     static_cast<T*>(y.raw()), k.threads());
  });
}

}  // namespace kiln::ops::tensor_ops
