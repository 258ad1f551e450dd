// Cast (to a dtype named by its ONNX TensorProto number) and CastLike (to another
// input's dtype). Conversions follow Tensor::cast: floats to integers truncate toward
// zero and saturate, NaN to integer gives 0, anything nonzero to bool is true,
// f16/bf16 round to nearest even.
#include "op_helpers.h"

namespace kiln::ops {
namespace {

DType cast_target(const Node& n, int64_t to) {
  DType dt = dtype_from_onnx_code(to);
  KILN_CHECK(dt != DType::undefined, n.describe(), ": Cast to ONNX data type ", to, " is not supported");
  return dt;
}

void infer_cast(InferContext& c) {
  c.set_output(0, cast_target(c.node(), c.node().attr_i("to", 0)), c.in_shape(0));
}

void cast_kernel(KernelContext& c) {
  c.set_output(0, c.input(0).cast(cast_target(c.node(), c.node().attr_i("to", 0))));
}

void infer_cast_like(InferContext& c) { c.set_output(0, c.in_dtype(1), c.in_shape(0)); }

void cast_like_kernel(KernelContext& c) { c.set_output(0, c.input(0).cast(c.input(1).dtype())); }

}  // namespace

OpDef def_Cast() {
  return {.name = "Cast", .since = 1, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"to", AttrKind::Int, true}, {"saturate", AttrKind::Int}}, .infer = infer_cast,
          .cost = cost_data_movement, .kernel = cast_kernel, .doc = "y = x converted to dtype `to`"};
}
OpDef def_CastLike() {
  return {.name = "CastLike", .since = 15, .min_inputs = 2, .max_inputs = 2, .infer = infer_cast_like,
          .cost = [](const CostContext& c) {
            Cost k;  // the target's data is not read, only its dtype
            k.bytes_read = c.in_dims.empty() ? 0 : numel_of(c.in_dims[0]) * dtype_size(c.in_dtypes[0]);
            k.bytes_written = c.io_bytes_written();
            return k;
          },
          .kernel = cast_like_kernel, .doc = "y = x converted to the dtype of target_type"};
}

}  // namespace kiln::ops
