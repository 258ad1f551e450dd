// Pieces shared by the tensor-movement ops (private to ops/tensor/): reading shape-like
// inputs during inference, strided copies, index checks, dtype codes.
#pragma once
#include <cstring>
#include <optional>
#include <vector>

#include "../op_helpers.h"
#include "kiln/kernels/strided_copy.h"

namespace kiln::ops::tensor_ops {

// Elements of a constant int input (i32/i64) during inference; nullopt when not known.
std::optional<std::vector<int64_t>> const_ints(const InferContext& c, size_t i);
// Shape of `rank` unknown dims.
Shape unknown_dims(size_t rank);
// Length of a 1-D shape-like input (e.g. Reshape's shape) when static; nullopt otherwise.
std::optional<int64_t> static_length(const InferContext& c, size_t i);
// Dims (static or symbolic) -> Shape dims, where a product of dims is needed: static
// product when all static, the single non-1 dim when only one is non-static, else unknown.
Dim product_dim(const std::vector<Dim>& dims);

// Index `idx` into a dim of size n, negative counting from the end; throws naming the node.
inline int64_t checked_index(int64_t idx, int64_t n, const KernelContext& k, const char* what) {
  int64_t j = idx < 0 ? idx + n : idx;
  if (j < 0 || j >= n) k.fail(str_cat(what, " index ", idx, " is out of range for a dim of size ", n));
  return j;
}

// kernels::strided_copy (kiln/kernels/strided_copy.h) over vectors of dims and strides.
template <typename T>
void strided_copy(const T* src, int64_t offset, const std::vector<int64_t>& strides, const std::vector<int64_t>& dims,
                  T* dst) {
  kernels::strided_copy<T>(src, offset, strides.data(), dims.data(), dims.size(), dst);
}

// Dims computed from tensor values (untrusted) must give a sane element count: fails when
// a dim is negative or the count overflows / exceeds 2^40 elements, before any allocation.
void check_dims(const std::vector<int64_t>& dims, const KernelContext& k);

// Runs strided_copy for any dtype, allocating output `out` of ctx with `dims`.
void copy_view(KernelContext& k, size_t out, const Tensor& src, int64_t offset,
               const std::vector<int64_t>& strides, const std::vector<int64_t>& dims);

}  // namespace kiln::ops::tensor_ops

namespace kiln::ops::tensor_ops {
// From gather.cpp, shared with the scatter ops: element offsets of ScatterND's index
// tuples (slice = elements per tuple) and ScatterElements' walk fn(update position, offset).
std::vector<int64_t> scatter_nd_offsets(const Tensor& x, const Tensor& ind, const KernelContext& k, int64_t* slice);
void scatter_elements_walk(const Tensor& data, const Tensor& ind, int64_t axis, const KernelContext& k,
                           const std::function<void(int64_t, int64_t)>& fn);
}  // namespace kiln::ops::tensor_ops
