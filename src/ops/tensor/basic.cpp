// Identity, Dropout (inference), Constant, ConstantOfShape, Shape, Size.
#include "kiln/ops/views.h"
#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

void identity_kernel(KernelContext& k) { k.set_output(0, k.input(0)); }

// ---- Dropout: identity at inference; the optional mask is all true.
DType dropout_mask_dtype(int64_t opset, DType in) { return opset >= 10 ? DType::boolean : in; }

void dropout_infer(InferContext& c) {
  c.set_output(0, c.in_dtype(0), c.in_shape(0));
  c.set_output(1, dropout_mask_dtype(c.opset(), c.in_dtype(0)), c.in_shape(0));
}

void dropout_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  if (k.opset() >= 12 && k.has_input(2)) {
    bool training = k.input(2).numel() > 0 && k.input(2).as_double(0) != 0;
    double ratio = k.has_input(1) && k.input(1).numel() > 0 ? k.input(1).as_double(0) : 0.5;
    if (training && ratio != 0) k.fail("training_mode=true (random dropout) is not supported");
  }
  k.set_output(0, x);
  if (k.has_output(1)) {
    Tensor one = Tensor::scalar<float>(1.f).cast(dropout_mask_dtype(k.opset(), x.dtype()));
    Tensor& m = k.alloc_output(1, one.dtype(), x.dims());
    const size_t es = dtype_size(m.dtype());
    auto* dst = static_cast<char*>(m.raw());
    for (int64_t i = 0; i < m.numel(); ++i) std::memcpy(dst + i * es, one.raw(), es);
  }
}

// ---- Constant: exactly one of the value* attributes.
Tensor constant_value(const Node& n) {
  if (auto* a = n.find_attr("value")) return a->t();
  if (auto* a = n.find_attr("value_float")) return Tensor::scalar<float>(a->f());
  if (auto* a = n.find_attr("value_floats"))
    return Tensor::from_vector<float>({static_cast<int64_t>(a->floats().size())}, a->floats());
  if (auto* a = n.find_attr("value_int")) return Tensor::scalar<int64_t>(a->i());
  if (auto* a = n.find_attr("value_ints"))
    return Tensor::from_vector<int64_t>({static_cast<int64_t>(a->ints().size())}, a->ints());
  if (n.has_attr("value_string") || n.has_attr("value_strings"))
    throw Error(str_cat(n.describe(), ": string constants are not supported"));
  if (n.has_attr("sparse_value")) throw Error(str_cat(n.describe(), ": sparse constants are not supported"));
  throw Error(str_cat(n.describe(), ": Constant needs one of value, value_float(s), value_int(s)"));
}

void constant_infer(InferContext& c) {
  Tensor t = constant_value(c.node());
  c.set_output(0, t.dtype(), Shape::of(t.dims()));
}

void constant_kernel(KernelContext& k) { k.set_output(0, constant_value(k.node())); }

// ---- ConstantOfShape
Tensor fill_value(const Node& n) {
  const Attribute* a = n.find_attr("value");
  if (!a) return Tensor::scalar<float>(0.f);
  KILN_CHECK(a->t().numel() == 1, n.describe(), ": value must hold exactly one element, has ", a->t().numel());
  return a->t();
}

void constant_of_shape_infer(InferContext& c) {
  DType dt = fill_value(c.node()).dtype();
  if (auto dims = const_ints(c, 0)) {
    for (int64_t d : *dims)
      if (d < 0) c.fail(str_cat("negative dim ", d, " in shape ", dims_str(*dims)));
    c.set_output(0, dt, Shape::of(*dims));
  } else if (auto len = static_length(c, 0)) {
    c.set_output(0, dt, unknown_dims(*len));
  } else {
    c.set_output(0, dt, Shape::unknown_rank());
  }
}

void constant_of_shape_kernel(KernelContext& k) {
  Tensor v = fill_value(k.node());
  std::vector<int64_t> dims = k.input(0).to_int64_vector();
  check_dims(dims, k);
  Tensor& y = k.alloc_output(0, v.dtype(), dims);
  const size_t es = dtype_size(v.dtype());
  auto* dst = static_cast<char*>(y.raw());
  for (int64_t i = 0; i < y.numel(); ++i) std::memcpy(dst + i * es, v.raw(), es);
}

// ---- Shape (opset 15: start/end select a range of dims, clamped like Slice)
std::pair<int64_t, int64_t> shape_range(const Node& n, int64_t rank) {
  auto clamp = [rank](int64_t v) { return std::clamp(v < 0 ? v + rank : v, int64_t{0}, rank); };
  int64_t start = clamp(n.attr_i("start", 0));
  int64_t end = clamp(n.attr_i("end", rank));
  return {start, std::max(start, end)};
}

void shape_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  if (!s.rank_known) return c.set_output(0, DType::i64, unknown_dims(1));
  auto [b, e] = shape_range(c.node(), static_cast<int64_t>(s.rank()));
  c.set_output(0, DType::i64, Shape({e - b}));
}

void shape_kernel(KernelContext& k) {
  std::vector<int64_t> v = shape_op_dims(k.node(), k.input(0).dims());
  k.set_output(0, Tensor::from_vector<int64_t>({static_cast<int64_t>(v.size())}, v));
}

// ---- Size
void size_infer(InferContext& c) { c.set_output(0, DType::i64, Shape()); }
void size_kernel(KernelContext& k) { k.set_output(0, Tensor::scalar<int64_t>(k.input(0).numel())); }

// Shape and Size read only dims: no bytes of the input move.
Cost cost_metadata(const CostContext& c) {
  Cost k;
  k.bytes_written = c.io_bytes_written();
  return k;
}

}  // namespace

std::vector<int64_t> shape_op_dims(const Node& n, const std::vector<int64_t>& x) {
  auto [b, e] = shape_range(n, static_cast<int64_t>(x.size()));
  return std::vector<int64_t>(x.begin() + b, x.begin() + e);
}

OpDef def_Identity() {
  return {.name = "Identity", .since = 1, .min_inputs = 1, .max_inputs = 1, .infer = infer_same_as_input0,
          .cost = cost_data_movement, .kernel = identity_kernel, .doc = "y = x"};
}

OpDef def_Dropout() {
  return {.name = "Dropout", .since = 1, .min_inputs = 1, .max_inputs = 3, .min_outputs = 1, .max_outputs = 2,
          .attrs = {{"ratio", AttrKind::Float}, {"is_test", AttrKind::Int}, {"seed", AttrKind::Int}},
          .infer = dropout_infer, .cost = cost_data_movement, .kernel = dropout_kernel,
          .doc = "inference dropout: y = x, mask all true"};
}

OpDef def_Constant() {
  return {.name = "Constant", .since = 1, .min_inputs = 0, .max_inputs = 0,
          .attrs = {{"value", AttrKind::Tensor}, {"value_float", AttrKind::Float}, {"value_floats", AttrKind::Floats},
                    {"value_int", AttrKind::Int}, {"value_ints", AttrKind::Ints}, {"value_string", AttrKind::String},
                    {"value_strings", AttrKind::Strings}, {"sparse_value", AttrKind::Tensor}},
          .infer = constant_infer, .cost = cost_data_movement, .kernel = constant_kernel,
          .doc = "a constant tensor from an attribute"};
}

OpDef def_ConstantOfShape() {
  return {.name = "ConstantOfShape", .since = 9, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"value", AttrKind::Tensor}}, .infer = constant_of_shape_infer, .cost = cost_data_movement,
          .kernel = constant_of_shape_kernel, .doc = "tensor of the given shape filled with value (default f32 0)"};
}

OpDef def_Shape() {
  return {.name = "Shape", .since = 1, .min_inputs = 1, .max_inputs = 1,
          .attrs = {{"start", AttrKind::Int}, {"end", AttrKind::Int}}, .infer = shape_infer, .cost = cost_metadata,
          .kernel = shape_kernel, .doc = "dims of x as a 1-D i64 tensor (opset 15: dims[start:end])"};
}

OpDef def_Size() {
  return {.name = "Size", .since = 1, .min_inputs = 1, .max_inputs = 1, .infer = size_infer, .cost = cost_metadata,
          .kernel = size_kernel, .doc = "number of elements of x as an i64 scalar"};
}

}  // namespace kiln::ops
