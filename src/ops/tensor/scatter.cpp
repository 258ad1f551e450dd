// Index-driven writes: ScatterND and ScatterElements, with reduction none/add/mul
// (opset 16; max/min of opset 18 too). Output = copy of data with updates applied.
#include <algorithm>

#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

enum class Reduction { none, add, mul, max, min };

Reduction reduction_of(const KernelContext& k) {
  std::string r = k.node().attr_s("reduction", "none");
  if (r == "none") return Reduction::none;
  if (r == "add") return Reduction::add;
  if (r == "mul") return Reduction::mul;
  if (r == "max") return Reduction::max;
  if (r == "min") return Reduction::min;
  k.fail(str_cat("unknown reduction '", r, "' (none, add, mul, max, min)"));
}

template <typename T>
void combine(T& dst, T v, Reduction r) {
  switch (r) {
    case Reduction::none: dst = v; break;
    case Reduction::add: dst = static_cast<T>(dst + v); break;
    case Reduction::mul: dst = static_cast<T>(dst * v); break;
    case Reduction::max: dst = std::max(dst, v); break;
    case Reduction::min: dst = std::min(dst, v); break;
  }
}

// Runs body(T) with T the element type: raw bytes for plain overwrite (any dtype), the
// numeric type when a reduction computes.
#define KILN_SCATTER_DISPATCH(red, dtype, k, ...)                                             \
  if ((red) == Reduction::none) {                                                             \
    KILN_DISPATCH_BYTES(dtype, (k).node().describe(), __VA_ARGS__);                           \
  } else {                                                                                    \
    KILN_DISPATCH_NUMERIC(dtype, (k).node().describe(), __VA_ARGS__);                         \
  }

void scatter_nd_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const Tensor& ind = k.input(1);
  const Tensor& upd = k.input(2);
  if (upd.dtype() != x.dtype()) k.fail("updates and data differ in dtype");
  int64_t slice = 1;
  std::vector<int64_t> offs = scatter_nd_offsets(x, ind, k, &slice);
  // updates shape must be indices.shape[:-1] + data.shape[k:]
  std::vector<int64_t> want(ind.dims().begin(), ind.dims().end() - 1);
  want.insert(want.end(), x.dims().begin() + ind.dims().back(), x.dims().end());
  if (upd.dims() != want) k.fail(str_cat("updates ", dims_str(upd.dims()), " should be ", dims_str(want)));
  Tensor y = x.clone();
  const Reduction red = reduction_of(k);
  KILN_SCATTER_DISPATCH(red, x.dtype(), k, {
    T* dst = static_cast<T*>(y.raw());
    const T* u = static_cast<const T*>(upd.raw());
    for (size_t t = 0; t < offs.size(); ++t)
      for (int64_t j = 0; j < slice; ++j) combine(dst[offs[t] + j], u[t * slice + j], red);
  });
  k.set_output(0, y);
}

void scatter_elements_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const Tensor& ind = k.input(1);
  const Tensor& upd = k.input(2);
  if (upd.dtype() != x.dtype()) k.fail("updates and data differ in dtype");
  if (upd.dims() != ind.dims())
    k.fail(str_cat("updates ", dims_str(upd.dims()), " and indices ", dims_str(ind.dims()), " differ in shape"));
  const int64_t axis = normalize_axis(k.node().attr_i("axis", 0), static_cast<int64_t>(x.rank()), k.node());
  Tensor y = x.clone();
  const Reduction red = reduction_of(k);
  KILN_SCATTER_DISPATCH(red, x.dtype(), k, {
    T* dst = static_cast<T*>(y.raw());
    const T* u = static_cast<const T*>(upd.raw());
    scatter_elements_walk(x, ind, axis, k, [&](int64_t e, int64_t off) { combine(dst[off], u[e], red); });
  });
  k.set_output(0, y);
}

// Reads data, indices and updates; writes the whole output (a copy of data).
Cost cost_scatter(const CostContext& c) {
  Cost k = cost_data_movement(c);
  if (c.node.attr_s("reduction", "none") != "none" && c.in_dims.size() > 2)
    k.flops = static_cast<double>(numel_of(c.in_dims[2]));
  return k;
}

}  // namespace

OpDef def_ScatterND() {
  return {.name = "ScatterND", .since = 11, .min_inputs = 3, .max_inputs = 3,
          .attrs = {{"reduction", AttrKind::String}}, .infer = infer_same_as_input0, .cost = cost_scatter,
          .kernel = scatter_nd_kernel, .doc = "copy of data with slices at index tuples replaced (or reduced)"};
}

OpDef def_ScatterElements() {
  return {.name = "ScatterElements", .since = 11, .min_inputs = 3, .max_inputs = 3,
          .attrs = {{"axis", AttrKind::Int}, {"reduction", AttrKind::String}}, .infer = infer_same_as_input0,
          .cost = cost_scatter, .kernel = scatter_elements_kernel,
          .doc = "copy of data with elements at indices along axis replaced (or reduced)"};
}

}  // namespace kiln::ops
