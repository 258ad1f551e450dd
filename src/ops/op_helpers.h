// Shared pieces for op definitions (private to ops/): dtype dispatch, axis handling,
// common shape-inference and cost functions. Use these rather than writing twins.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/ops/op.h"

namespace kiln::ops {

// Declarations of every def_<Name>() (definitions live in the category folders).
#define KILN_OP(N) OpDef def_##N();
#include "op_list.inc"
#undef KILN_OP

// ---- dtype dispatch: runs BODY with `using T = <C++ type>` for the tensor's dtype.
#define KILN_DISPATCH_CASE(DT, CT, ...) \
  case ::kiln::DType::DT: {             \
    using T = CT;                       \
    __VA_ARGS__;                        \
    break;                              \
  }
// f32, f64 (f16/bf16 are computed by converting to f32 first; see with_f32)
#define KILN_DISPATCH_FLOAT(dtype, what, ...)                                          \
  switch (dtype) {                                                                     \
    KILN_DISPATCH_CASE(f32, float, __VA_ARGS__)                                        \
    KILN_DISPATCH_CASE(f64, double, __VA_ARGS__)                                       \
    default:                                                                           \
      throw ::kiln::Error(::kiln::str_cat(what, ": unsupported dtype ", ::kiln::dtype_name(dtype))); \
  }
// floats and all integer types
#define KILN_DISPATCH_NUMERIC(dtype, what, ...)                                        \
  switch (dtype) {                                                                     \
    KILN_DISPATCH_CASE(f32, float, __VA_ARGS__)                                        \
    KILN_DISPATCH_CASE(f64, double, __VA_ARGS__)                                       \
    KILN_DISPATCH_CASE(i8, int8_t, __VA_ARGS__)                                        \
    KILN_DISPATCH_CASE(u8, uint8_t, __VA_ARGS__)                                       \
    KILN_DISPATCH_CASE(i16, int16_t, __VA_ARGS__)                                      \
    KILN_DISPATCH_CASE(u16, uint16_t, __VA_ARGS__)                                     \
    KILN_DISPATCH_CASE(i32, int32_t, __VA_ARGS__)                                      \
    KILN_DISPATCH_CASE(u32, uint32_t, __VA_ARGS__)                                     \
    KILN_DISPATCH_CASE(i64, int64_t, __VA_ARGS__)                                      \
    KILN_DISPATCH_CASE(u64, uint64_t, __VA_ARGS__)                                     \
    default:                                                                           \
      throw ::kiln::Error(::kiln::str_cat(what, ": unsupported dtype ", ::kiln::dtype_name(dtype))); \
  }
// any dtype, by element size only (for pure data movement: copy, gather, transpose)
#define KILN_DISPATCH_BYTES(dtype, what, ...)                                           \
  switch (::kiln::dtype_size(dtype)) {                                                 \
    case 1: { using T = uint8_t; __VA_ARGS__; break; }                                 \
    case 2: { using T = uint16_t; __VA_ARGS__; break; }                                \
    case 4: { using T = uint32_t; __VA_ARGS__; break; }                                \
    case 8: { using T = uint64_t; __VA_ARGS__; break; }                                \
    default:                                                                           \
      throw ::kiln::Error(::kiln::str_cat(what, ": unsupported dtype ", ::kiln::dtype_name(dtype))); \
  }

// Axis in [-rank, rank) -> [0, rank); throws a clear error otherwise.
int64_t normalize_axis(int64_t axis, int64_t rank, const Node& node);
// Row-major strides of dims.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);
// Concrete numpy broadcast; throws naming the node on mismatch.
std::vector<int64_t> broadcast_dims(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                    const Node& node);

// f16/bf16 inputs: kernels written for f32 call this to get an f32 view of an input
// (a converted copy for f16/bf16, the tensor itself for f32).
Tensor to_f32(const Tensor& t);
// Converts an f32 result back to `dtype` (identity for f32).
Tensor from_f32(const Tensor& t, DType dtype);

// ---- common shape inference
void infer_same_as_input0(InferContext& c);   // out0 = dtype and shape of in0
void infer_broadcast(InferContext& c);        // out0 = broadcast of all inputs, dtype of in0
void infer_broadcast_bool(InferContext& c);   // same shape, dtype bool (comparisons)

// ---- common costs
Cost cost_elementwise(const CostContext& c);  // 1 flop per output element + io bytes
Cost cost_data_movement(const CostContext& c);  // 0 flops + io bytes

}  // namespace kiln::ops

namespace kiln::ops {
// ONNX TensorProto data type number (1 = float, 7 = int64, 9 = bool, 10 = float16, ...) ->
// DType, for attributes such as Cast.to; DType::undefined for types kiln lacks.
DType dtype_from_onnx_code(int64_t code);
}  // namespace kiln::ops
