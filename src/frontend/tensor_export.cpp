// kiln -> TensorProto / TypeProto. Tensors are written as raw_data (little-endian).
#include <cstring>

#include "onnx_convert.h"

namespace kiln::onnx_io {

void tensor_to_onnx(const Tensor& t, onnx::TensorProto* out) {
  int32_t dt = dtype_to_onnx(t.dtype());
  KILN_CHECK(dt != onnx::TensorProto::UNDEFINED, "cannot export a tensor of dtype ", dtype_name(t.dtype()));
  out->set_data_type(dt);
  for (int64_t d : t.dims()) out->add_dims(d);
  if (t.nbytes() != 0) out->set_raw_data(static_cast<const char*>(t.raw()), t.nbytes());
  else out->set_raw_data("");
}

void type_to_onnx(DType dtype, const Shape& shape, onnx::TypeProto* out) {
  auto* tt = out->mutable_tensor_type();
  tt->set_elem_type(dtype == DType::undefined ? onnx::TensorProto::UNDEFINED : dtype_to_onnx(dtype));
  if (!shape.rank_known) return;
  auto* sp = tt->mutable_shape();  // present even for scalars: rank 0 is known
  for (const Dim& d : shape.dims) {
    auto* dim = sp->add_dim();
    if (d.is_static()) dim->set_dim_value(d.value);
    else if (d.is_symbolic()) dim->set_dim_param(d.symbol);
  }
}

}  // namespace kiln::onnx_io
