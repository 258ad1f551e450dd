#include "op_helpers.h"

namespace kiln::ops {

int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node) {
  KILN_CHECK(axis >= -rank && axis < rank, node.describe(), ": axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = static_cast<int64_t>(dims.size()) - 2; i >= 0; --i) s[i] = s[i + 1] * dims[i + 1];
  return s;
}

std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b, const Node& node) {
  size_t r = std::max(a.size(), b.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    KILN_CHECK(da == db || da == 1 || db == 1, node.describe(), ": shapes ", dims_str(a), " and ", dims_str(b),
               " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Tensor to_f32(const Tensor& t) { return t.dtype() == DType::f32 ? t : t.cast(DType::f32); }

Tensor from_f32(const Tensor& t, DType dtype) { return dtype == DType::f32 ? t : t.cast(dtype); }

void infer_same_as_input0(InferContext& c) { c.set_output(0, c.in_dtype(0), c.in_shape(0)); }

static Shape broadcast_all(InferContext& c) {
  Shape s = c.in_shape(0);
  for (size_t i = 1; i < c.num_inputs(); ++i) {
    if (!c.has_input(i)) continue;
    auto b = broadcast_shapes(s, c.in_shape(i));
    if (!b) c.fail(str_cat("shapes ", s.str(), " and ", c.in_shape(i).str(), " do not broadcast"));
    s = *b;
  }
  return s;
}

void infer_broadcast(InferContext& c) { c.set_output(0, c.in_dtype(0), broadcast_all(c)); }

void infer_broadcast_bool(InferContext& c) { c.set_output(0, DType::boolean, broadcast_all(c)); }

Cost cost_elementwise(const CostContext& c) {
  Cost k;
  k.flops = c.out_dims.empty() ? 0 : static_cast<double>(numel_of(c.out_dims[0]));
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

Cost cost_data_movement(const CostContext& c) {
  Cost k;
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

}  // namespace kiln::ops

namespace kiln::ops {
DType dtype_from_onnx_code(int64_t code) {
  switch (code) {
    case 1: return DType::f32;
    case 2: return DType::u8;
    case 3: return DType::i8;
    case 4: return DType::u16;
    case 5: return DType::i16;
    case 6: return DType::i32;
    case 7: return DType::i64;
    case 9: return DType::boolean;
    case 10: return DType::f16;
    case 11: return DType::f64;
    case 12: return DType::u32;
    case 13: return DType::u64;
    case 16: return DType::bf16;
    default: return DType::undefined;  // 8 string, 14/15 complex, 17+ float8: not in kiln
  }
}
}  // namespace kiln::ops
