// Internal to frontend/: conversions between onnx protobuf messages and kiln IR.
// Nothing here leaves the module; callers use kiln/frontend/onnx.h.
#pragma once
#include <onnx/onnx_pb.h>

#include <string>

#include "kiln/ir/graph.h"

namespace kiln::onnx_io {

// onnx::TensorProto_DataType <-> DType. dtype_from_onnx throws for types kiln lacks.
DType dtype_from_onnx(int32_t elem_type, const std::string& what);
int32_t dtype_to_onnx(DType t);

// Throws unless every dim is >= 0 and the product of the non-zero dims fits comfortably in
// int64 (so later size and stride arithmetic cannot overflow).
void check_static_dims(const std::vector<int64_t>& dims, const std::string& what);

// What tensor import needs besides the message: where external data lives.
struct TensorSource {
  std::string model_dir;  // directory of the model file; empty when imported from bytes
};

// Converts a TensorProto. `t` is mutable so raw_data can be moved into the tensor's
// storage instead of copied. `what` names the tensor in error messages.
Tensor tensor_from_onnx(onnx::TensorProto& t, const TensorSource& src, const std::string& what);
// Writes data as raw_data (little-endian, as ONNX requires; kiln only targets little-endian hosts).
void tensor_to_onnx(const Tensor& t, onnx::TensorProto* out);

// Shape/dtype of a ValueInfoProto's tensor type. Non-tensor types throw.
void type_from_onnx(const onnx::TypeProto& type, const std::string& what, DType* dtype, Shape* shape);
void type_to_onnx(DType dtype, const Shape& shape, onnx::TypeProto* out);

// Fills `g` from a GraphProto. `g.parent` must already be set for subgraphs.
void graph_from_onnx(onnx::GraphProto& gp, Graph& g, int64_t ir_version, const TensorSource& src);

// Writes `g` into a GraphProto. Tensors whose byte size exceeds external_over (>= 0) are
// handed to `external` instead of being stored inline.
struct ExternalWriter {
  virtual ~ExternalWriter() = default;
  // Stores t's bytes and fills tp's external_data fields.
  virtual void store(const Tensor& t, onnx::TensorProto* tp) = 0;
};
void graph_to_onnx(const Graph& g, onnx::GraphProto* gp, int64_t ir_version, int64_t external_over,
                   ExternalWriter* external);

}  // namespace kiln::onnx_io
