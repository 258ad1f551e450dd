// kiln.QLookup(x, table): y[i] = table[byte(x[i])], byte(x) = x for u8 and x + 128 for i8 (the
// table lists the outputs of the 256 input values in increasing order). fold-qdq-lookup writes
// it for DequantizeLinear -> element-wise ops -> [QuantizeLinear] chains of 8-bit tensors (a
// SiLU between quantized convolutions): the chain's result for each of the 256 possible inputs,
// computed once by the op table's reference kernels, so the lookup is the chain's reference
// result exactly. The table is u8, i8 (the chain ended in QuantizeLinear) or f32.
#include "kiln_common.h"

namespace kiln::ops {
namespace {

void infer_qlookup(InferContext& c) {
  const DType x = c.in_dtype(0), t = c.in_dtype(1);
  if (x != DType::undefined && x != DType::u8 && x != DType::i8)
    c.fail(str_cat("x must be u8 or i8, got ", dtype_name(x)));
  if (t != DType::undefined && t != DType::u8 && t != DType::i8 && t != DType::f32)
    c.fail(str_cat("table must be u8, i8 or f32, got ", dtype_name(t)));
  const Shape& ts = c.in_shape(1);
  if (ts.rank_known && !(ts.rank() == 1 && ts.is_static() && ts.static_dims()[0] == 256))
    c.fail(str_cat("table must have shape [256], got ", ts.str()));
  c.set_output(0, t, c.in_shape(0));
}

template <typename Out>
void look_up(const Tensor& x, const Tensor& table, Tensor& y) {
  const Out* t = table.data<Out>();
  Out* out = y.data<Out>();
  const auto* in = static_cast<const uint8_t*>(x.raw());
  const uint8_t flip = x.dtype() == DType::i8 ? 0x80 : 0;
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = t[in[i] ^ flip];
}

void kernel_qlookup(KernelContext& c) {
  const Tensor& x = c.input(0);
  const Tensor& table = c.input(1);
  if (x.dtype() != DType::u8 && x.dtype() != DType::i8) c.fail(str_cat("x must be u8 or i8, got ", dtype_name(x.dtype())));
  if (table.numel() != 256) c.fail(str_cat("table must have 256 entries, got ", table.numel()));
  Tensor& y = c.alloc_output(0, table.dtype(), x.dims());
  switch (table.dtype()) {
    case DType::u8: look_up<uint8_t>(x, table, y); break;
    case DType::i8: look_up<int8_t>(x, table, y); break;
    case DType::f32: look_up<float>(x, table, y); break;
    default: c.fail(str_cat("table must be u8, i8 or f32, got ", dtype_name(table.dtype())));
  }
}

}  // namespace

OpDef def_QLookup() {
  return {.name = "QLookup",
          .domain = kKilnDomain,
          .since = kKilnOpsetVersion,
          .min_inputs = 2,
          .max_inputs = 2,
          .infer = infer_qlookup,
          .cost = cost_data_movement,
          .kernel = kernel_qlookup,
          .doc = "y = table[x]: a 256-entry table of an 8-bit tensor (an element-wise chain between QDQ pairs)"};
}

}  // namespace kiln::ops
