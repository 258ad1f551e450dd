// Ops that only change dims (no data movement): Reshape, Flatten, Squeeze, Unsqueeze.
// Kernels return a view of the input's storage with new dims.
#include <algorithm>

#include "tensor_common.h"

namespace kiln::ops {
using namespace tensor_ops;

namespace {

// ---- Reshape: 0 copies the input dim (unless allowzero), one -1 is inferred.
// Works on Dims so symbols pass through; -1 is solved when the non-static dims of input
// and target cancel out (e.g. [N,128,768] -> [N,128,12,-1]).
Shape reshape_target(const Shape& in, const std::vector<int64_t>& target, bool allowzero,
                     const std::function<void(const std::string&)>& fail) {
  std::vector<Dim> out;
  int minus_one = -1;
  for (size_t i = 0; i < target.size(); ++i) {
    int64_t t = target[i];
    if (t == -1) {
      if (minus_one >= 0) fail(str_cat("shape ", dims_str(target), " has more than one -1"));
      minus_one = static_cast<int>(i);
      out.push_back(Dim::unknown());
    } else if (t == 0 && !allowzero) {
      if (in.rank_known && i >= in.rank())
        fail(str_cat("shape ", dims_str(target), ": 0 at position ", i, " but input rank is ", in.rank()));
      out.push_back(in.rank_known ? in[i] : Dim::unknown());
    } else if (t < 0) {
      fail(str_cat("shape ", dims_str(target), " has invalid dim ", t));
    } else {
      out.push_back(Dim(t));
    }
  }
  if (allowzero && minus_one >= 0 && std::count(target.begin(), target.end(), 0) > 0)
    fail(str_cat("shape ", dims_str(target), " has both 0 and -1 with allowzero=1"));
  if (!in.rank_known) return Shape(out);
  // Cancel equal non-static dims between input and target, multiply the static rest.
  std::vector<Dim> num = in.dims;
  int64_t num_p = 1, den_p = 1;
  bool solvable = true;
  for (size_t i = 0; i < out.size(); ++i) {
    if (static_cast<int>(i) == minus_one) continue;
    const Dim& d = out[i];
    if (d.is_static()) {
      den_p *= d.value;
      continue;
    }
    auto it = d.is_symbolic() ? std::find(num.begin(), num.end(), d) : num.end();
    if (it == num.end()) {
      solvable = false;
      break;
    }
    num.erase(it);
  }
  std::vector<Dim> rest;
  for (const Dim& d : num) {
    if (d.is_static()) num_p *= d.value;
    else rest.push_back(d);
  }
  if (minus_one >= 0 && solvable) {
    if (rest.empty()) {
      if (den_p == 0 || num_p % den_p != 0)
        fail(str_cat("cannot reshape ", in.str(), " to ", dims_str(target)));
      out[minus_one] = Dim(num_p / den_p);
    } else if (rest.size() == 1 && rest[0].is_symbolic() && num_p == den_p) {
      out[minus_one] = rest[0];
    }
  } else if (minus_one < 0 && solvable && rest.empty() && num_p != den_p) {
    fail(str_cat("cannot reshape ", in.str(), " (", num_p, " elements) to ", dims_str(target)));
  }
  return Shape(out);
}

void reshape_infer(InferContext& c) {
  auto fail = [&c](const std::string& m) { c.fail(m); };
  if (auto target = const_ints(c, 1))
    return c.set_output(0, c.in_dtype(0),
                        reshape_target(c.in_shape(0), *target, c.node().attr_i("allowzero", 0) != 0, fail));
  if (auto len = static_length(c, 1)) return c.set_output(0, c.in_dtype(0), unknown_dims(*len));
  c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
}

void reshape_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  auto fail = [&k](const std::string& m) { k.fail(m); };
  Shape s = reshape_target(Shape::of(x.dims()), k.input(1).to_int64_vector(), k.node().attr_i("allowzero", 0) != 0,
                           fail);
  std::vector<int64_t> dims = s.static_dims();
  check_dims(dims, k);
  if (numel_of(dims) != x.numel())
    k.fail(str_cat("cannot reshape ", dims_str(x.dims()), " to ", dims_str(dims)));
  k.set_output(0, x.reshaped(dims));
}

// ---- Flatten: [d0..d(axis-1)] x [d(axis)..] -> 2-D
void flatten_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  if (!s.rank_known) return c.set_output(0, c.in_dtype(0), unknown_dims(2));
  const int64_t r = static_cast<int64_t>(s.rank());
  int64_t axis = c.node().attr_i("axis", 1);
  if (axis < -r || axis > r) c.fail(str_cat("axis ", axis, " is out of range for rank ", r));
  if (axis < 0) axis += r;
  std::vector<Dim> a(s.dims.begin(), s.dims.begin() + axis), b(s.dims.begin() + axis, s.dims.end());
  c.set_output(0, c.in_dtype(0), Shape({product_dim(a), product_dim(b)}));
}

void flatten_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  const int64_t r = static_cast<int64_t>(x.rank());
  int64_t axis = k.node().attr_i("axis", 1);
  if (axis < -r || axis > r) k.fail(str_cat("axis ", axis, " is out of range for rank ", r));
  if (axis < 0) axis += r;
  int64_t outer = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x.dim(d);
  int64_t inner = outer == 0 ? 0 : x.numel() / outer;
  if (outer == 0) {
    inner = 1;
    for (int64_t d = axis; d < r; ++d) inner *= x.dim(d);
  }
  k.set_output(0, x.reshaped({outer, inner}));
}

// ---- Squeeze / Unsqueeze: axes from the attribute (opset < 13) or input 1 (>= 13).
std::optional<std::vector<int64_t>> axes_of(const Node& n, int64_t opset, const Tensor* axes_input,
                                            bool axes_input_present) {
  if (opset < 13) {
    if (!n.has_attr("axes")) return std::nullopt;
    return n.attr_ints("axes", {});
  }
  if (!axes_input_present) return std::nullopt;
  if (!axes_input) return std::nullopt;
  return axes_input->to_int64_vector();
}

std::vector<int64_t> normalized_axes(std::vector<int64_t> axes, int64_t rank, const Node& n) {
  for (int64_t& a : axes) a = normalize_axis(a, rank, n);
  std::sort(axes.begin(), axes.end());
  KILN_CHECK(std::adjacent_find(axes.begin(), axes.end()) == axes.end(), n.describe(), ": repeated axis in axes");
  return axes;
}

void squeeze_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  const bool input_axes = c.opset() >= 13 && c.has_input(1);
  auto axes = axes_of(c.node(), c.opset(), c.in_const(1), input_axes);
  if (!s.rank_known || (input_axes && !axes)) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  std::vector<Dim> out;
  if (!axes) {
    for (const Dim& d : s.dims) {
      if (!d.is_static()) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
      if (d.value != 1) out.push_back(d);
    }
    return c.set_output(0, c.in_dtype(0), Shape(out));
  }
  auto ax = normalized_axes(*axes, static_cast<int64_t>(s.rank()), c.node());
  for (size_t i = 0; i < s.rank(); ++i) {
    if (std::binary_search(ax.begin(), ax.end(), static_cast<int64_t>(i))) {
      if (s[i].is_static() && s[i].value != 1) c.fail(str_cat("cannot squeeze dim ", i, " of size ", s[i].value));
    } else {
      out.push_back(s[i]);
    }
  }
  c.set_output(0, c.in_dtype(0), Shape(out));
}

void squeeze_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  auto axes = axes_of(k.node(), k.opset(), k.has_input(1) ? &k.input(1) : nullptr, k.has_input(1));
  std::vector<int64_t> out;
  if (!axes) {
    for (int64_t d : x.dims())
      if (d != 1) out.push_back(d);
  } else {
    auto ax = normalized_axes(*axes, static_cast<int64_t>(x.rank()), k.node());
    for (size_t i = 0; i < x.rank(); ++i) {
      if (std::binary_search(ax.begin(), ax.end(), static_cast<int64_t>(i))) {
        if (x.dim(i) != 1) k.fail(str_cat("cannot squeeze dim ", i, " of size ", x.dim(i)));
      } else {
        out.push_back(x.dim(i));
      }
    }
  }
  k.set_output(0, x.reshaped(out));
}

// Output dims of Unsqueeze: ones inserted at the (output-rank) axes.
template <typename D>
std::vector<D> unsqueeze_dims(const std::vector<D>& in, const std::vector<int64_t>& axes, const Node& n) {
  const int64_t r = static_cast<int64_t>(in.size() + axes.size());
  auto ax = normalized_axes(axes, r, n);
  std::vector<D> out;
  size_t j = 0;
  for (int64_t i = 0; i < r; ++i) {
    if (std::binary_search(ax.begin(), ax.end(), i)) out.push_back(D(1));
    else out.push_back(in[j++]);
  }
  return out;
}

void unsqueeze_infer(InferContext& c) {
  const Shape& s = c.in_shape(0);
  auto axes = axes_of(c.node(), c.opset(), c.in_const(1), c.opset() >= 13 && c.has_input(1));
  if (c.opset() < 13 && !axes) c.fail("attribute 'axes' is required");
  if (c.opset() >= 13 && !c.has_input(1)) c.fail("input 'axes' is required");
  if (!s.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  if (!axes) {
    if (auto len = static_length(c, 1)) return c.set_output(0, c.in_dtype(0), unknown_dims(s.rank() + *len));
    return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  }
  c.set_output(0, c.in_dtype(0), Shape(unsqueeze_dims(s.dims, *axes, c.node())));
}

void unsqueeze_kernel(KernelContext& k) {
  const Tensor& x = k.input(0);
  auto axes = axes_of(k.node(), k.opset(), k.has_input(1) ? &k.input(1) : nullptr, k.has_input(1));
  if (!axes) k.fail("axes are required");
  k.set_output(0, x.reshaped(unsqueeze_dims(x.dims(), *axes, k.node())));
}

}  // namespace

OpDef def_Reshape() {
  return {.name = "Reshape", .since = 5, .min_inputs = 2, .max_inputs = 2, .attrs = {{"allowzero", AttrKind::Int}},
          .infer = reshape_infer, .cost = cost_data_movement, .kernel = reshape_kernel,
          .doc = "same data with new dims (0 copies a dim, -1 is inferred)"};
}

OpDef def_Flatten() {
  return {.name = "Flatten", .since = 1, .min_inputs = 1, .max_inputs = 1, .attrs = {{"axis", AttrKind::Int}},
          .infer = flatten_infer, .cost = cost_data_movement, .kernel = flatten_kernel,
          .doc = "2-D view: dims before axis x dims from axis"};
}

OpDef def_Squeeze() {
  return {.name = "Squeeze", .since = 1, .min_inputs = 1, .max_inputs = 2, .attrs = {{"axes", AttrKind::Ints}},
          .infer = squeeze_infer, .cost = cost_data_movement, .kernel = squeeze_kernel,
          .doc = "removes size-1 dims (the given axes, or all)"};
}

OpDef def_Unsqueeze() {
  return {.name = "Unsqueeze", .since = 1, .min_inputs = 1, .max_inputs = 2, .attrs = {{"axes", AttrKind::Ints}},
          .infer = unsqueeze_infer, .cost = cost_data_movement, .kernel = unsqueeze_kernel,
          .doc = "inserts size-1 dims at the given output axes"};
}

}  // namespace kiln::ops
