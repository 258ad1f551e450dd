#include <cstring>

#include "op_helpers.h"

namespace kiln::ops {

DType InferContext::in_dtype(size_t i) const {
  KILN_CHECK(has_input(i), node_.describe(), ": input ", i, " is missing");
  return node_.inputs[i]->dtype;
}

const Shape& InferContext::in_shape(size_t i) const {
  KILN_CHECK(has_input(i), node_.describe(), ": input ", i, " is missing");
  return node_.inputs[i]->shape;
}

const Tensor* InferContext::in_const(size_t i) const {
  if (!has_input(i)) return nullptr;
  const Value* v = node_.inputs[i];
  if (v->initializer) return &*v->initializer;
  if (known_ != nullptr) {
    auto it = known_->find(v);
    if (it != known_->end()) return &it->second;
  }
  return nullptr;
}

void InferContext::set_output(size_t i, DType dtype, Shape shape) {
  if (!has_output(i)) return;
  Value* v = node_.outputs[i];
  v->dtype = dtype;
  v->shape = std::move(shape);
}

void InferContext::fail(const std::string& msg) const {
  throw Error(str_cat(node_.describe(), " (opset ", opset_, "): ", msg));
}

double CostContext::io_bytes_read() const {
  double b = 0;
  for (size_t i = 0; i < in_dims.size(); ++i)
    if (node.input(i)) b += static_cast<double>(numel_of(in_dims[i])) * dtype_size(in_dtypes[i]);
  return b;
}

double CostContext::io_bytes_written() const {
  double b = 0;
  for (size_t i = 0; i < out_dims.size(); ++i)
    if (i < node.outputs.size() && node.outputs[i])
      b += static_cast<double>(numel_of(out_dims[i])) * dtype_size(out_dtypes[i]);
  return b;
}

const Tensor& KernelContext::input(size_t i) const {
  KILN_CHECK(has_input(i), node_.describe(), ": required input ", i, " is missing");
  return *inputs_[i];
}

Tensor& KernelContext::alloc_output(size_t i, DType dtype, std::vector<int64_t> dims) {
  KILN_CHECK(i < outputs_.size(), node_.describe(), ": output ", i, " out of range");
  if (i < preallocated_.size() && preallocated_[i].tensor != nullptr) {
    const Tensor& p = *preallocated_[i].tensor;
    if (p.dtype() == dtype && p.dims() == dims) {
      outputs_[i] = p;
      if (!preallocated_[i].keep_contents && p.nbytes() != 0) std::memset(outputs_[i].raw(), 0, p.nbytes());
      return outputs_[i];
    }
  }
  outputs_[i] = Tensor(dtype, std::move(dims));
  return outputs_[i];
}

void KernelContext::use_preallocated(size_t i, const Tensor* t, bool keep_contents) {
  KILN_CHECK(i < outputs_.size(), node_.describe(), ": output ", i, " out of range");
  if (preallocated_.size() < outputs_.size()) preallocated_.resize(outputs_.size());
  preallocated_[i] = Preallocated{t, keep_contents};
}

void KernelContext::set_output(size_t i, Tensor t) {
  KILN_CHECK(i < outputs_.size(), node_.describe(), ": output ", i, " out of range");
  outputs_[i] = std::move(t);
}

std::vector<Tensor> KernelContext::run_subgraph(const Graph& g, const std::vector<Tensor>& inputs) const {
  KILN_CHECK(run_subgraph_ != nullptr, node_.describe(), ": subgraphs cannot run in this context");
  return run_subgraph_(g, inputs);
}

void KernelContext::fail(const std::string& msg) const {
  throw Error(str_cat(node_.describe(), " (opset ", opset_, "): ", msg));
}

}  // namespace kiln::ops
