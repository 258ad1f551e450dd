#include "subgraph.h"

#include <cstring>

namespace kiln::ops::control {

const Graph& body_attr(const Node& n, const std::string& name) {
  const Attribute* a = n.find_attr(name);
  KILN_CHECK(a != nullptr && a->kind() == AttrKind::Graph && a->g() != nullptr, n.describe(),
             ": graph attribute '", name, "' is missing");
  return *a->g();
}

Shape merge_shapes(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known || a.rank() != b.rank()) return Shape::unknown_rank();
  Shape out = a;
  for (size_t i = 0; i < out.rank(); ++i)
    if (a.dims[i] != b.dims[i]) out.dims[i] = Dim::unknown();
  return out;
}

DType merge_dtypes(const InferContext& c, DType a, DType b, const std::string& what) {
  if (a == DType::undefined || b == DType::undefined) return DType::undefined;
  if (a != b) c.fail(str_cat(what, ": dtypes ", dtype_name(a), " and ", dtype_name(b), " differ"));
  return a;
}

std::vector<Tensor> run_body(const KernelContext& c, const Graph& body, const std::string& what,
                             const std::vector<Tensor>& inputs, size_t expected_outputs) {
  if (body.inputs.size() != inputs.size())
    c.fail(str_cat(what, " takes ", body.inputs.size(), " inputs, the op passes ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    DType want = body.inputs[i]->dtype;
    if (want != DType::undefined && want != inputs[i].dtype())
      c.fail(str_cat(what, " input ", i, " '", body.inputs[i]->name, "' is declared ", dtype_name(want), ", got ",
                     dtype_name(inputs[i].dtype())));
  }
  if (body.outputs.size() != expected_outputs)
    c.fail(str_cat(what, " has ", body.outputs.size(), " outputs, the op needs ", expected_outputs));
  std::vector<Tensor> outs = c.run_subgraph(body, inputs);
  KILN_CHECK(outs.size() == expected_outputs, c.node().describe(), ": ", what, " returned ", outs.size(),
             " outputs, expected ", expected_outputs);
  return outs;
}

bool read_bool(const KernelContext& c, const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::boolean) c.fail(str_cat(what, " must be bool, got ", dtype_name(t.dtype())));
  if (t.numel() != 1) c.fail(str_cat(what, " must have one element, got shape ", dims_str(t.dims())));
  return t.data<bool>()[0];
}

int64_t read_i64(const KernelContext& c, const Tensor& t, const std::string& what) {
  if (t.dtype() != DType::i64) c.fail(str_cat(what, " must be i64, got ", dtype_name(t.dtype())));
  if (t.numel() != 1) c.fail(str_cat(what, " must have one element, got shape ", dims_str(t.dims())));
  return t.data<int64_t>()[0];
}

namespace {
// Elements before `axis` (outer) and bytes after it (inner), for row-major copies.
std::pair<int64_t, size_t> outer_inner(const std::vector<int64_t>& dims, int64_t axis, size_t elem) {
  int64_t outer = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[i];
  size_t inner = elem;
  for (size_t i = axis; i < dims.size(); ++i) inner *= static_cast<size_t>(dims[i]);
  return {outer, inner};
}
}  // namespace

Tensor take_along(const Tensor& t, int64_t axis, int64_t index) {
  std::vector<int64_t> dims = t.dims();
  int64_t len = dims[axis];
  dims.erase(dims.begin() + axis);
  Tensor out(t.dtype(), dims);
  auto [outer, inner] = outer_inner(dims, axis, dtype_size(t.dtype()));
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  if (inner == 0) return out;
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * inner, src + (o * len + index) * inner, inner);
  return out;
}

Tensor stack_along(const KernelContext& c, const std::vector<Tensor>& parts, int64_t axis, bool reverse,
                   const std::vector<int64_t>& empty_dims, DType empty_dtype, const std::string& what) {
  const std::vector<int64_t>& part_dims = parts.empty() ? empty_dims : parts[0].dims();
  DType dt = parts.empty() ? empty_dtype : parts[0].dtype();
  for (const Tensor& p : parts) {
    if (p.dims() != part_dims || p.dtype() != dt)
      c.fail(str_cat(what, ": iterations give different shapes ", dtype_name(dt), dims_str(part_dims), " and ",
                     dtype_name(p.dtype()), dims_str(p.dims())));
  }
  int64_t len = static_cast<int64_t>(parts.size());
  std::vector<int64_t> dims = part_dims;
  dims.insert(dims.begin() + axis, len);
  Tensor out(dt, dims);
  auto [outer, inner] = outer_inner(part_dims, axis, dtype_size(dt));
  char* dst = static_cast<char*>(out.raw());
  if (inner == 0) return out;
  for (int64_t t = 0; t < len; ++t) {
    int64_t pos = reverse ? len - 1 - t : t;
    const char* src = static_cast<const char*>(parts[t].raw());
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + (o * len + pos) * inner, src + o * inner, inner);
  }
  return out;
}

std::vector<int64_t> dims_for_empty(const KernelContext& c, const Value& v, const std::string& what) {
  if (!v.shape.rank_known)
    c.fail(str_cat(what, ": zero iterations and body output '", v.name, "' has unknown rank"));
  std::vector<int64_t> d;
  for (const Dim& x : v.shape.dims) d.push_back(x.is_static() ? x.value : 0);
  return d;
}

namespace {
void seed(Value* formal, DType dt, const Shape& s) {
  if (formal->dtype == DType::undefined) formal->dtype = dt;
  if (!formal->shape.rank_known) formal->shape = s;
}
}  // namespace

void seed_body_inputs(Node& n, int64_t opset) {
  if (!n.domain.empty() && n.domain != "ai.onnx") return;
  const Attribute* a = n.find_attr("body");
  if (!a || a->kind() != AttrKind::Graph || !a->g()) return;
  Graph& body = *a->g();
  if (n.op == "Loop") {
    // Body inputs: iteration_num (i64 scalar), cond (bool scalar), carried values.
    if (body.inputs.size() < 2 || body.inputs.size() != n.inputs.size()) return;
    seed(body.inputs[0], DType::i64, Shape{});
    seed(body.inputs[1], DType::boolean, Shape{});
    for (size_t i = 2; i < n.inputs.size(); ++i)
      if (n.inputs[i]) seed(body.inputs[i], n.inputs[i]->dtype, Shape::unknown_rank());
  } else if (n.op == "Scan" && opset >= 9) {
    // Carried states keep dtype; scan inputs lose their scan axis (rank - 1).
    int64_t n_scan = n.attr_i("num_scan_inputs", -1);
    if (body.inputs.size() != n.inputs.size() || n_scan < 0 || n_scan > static_cast<int64_t>(n.inputs.size()))
      return;
    size_t n_state = n.inputs.size() - n_scan;
    for (size_t i = 0; i < n.inputs.size(); ++i) {
      if (!n.inputs[i]) continue;
      if (i < n_state) {
        seed(body.inputs[i], n.inputs[i]->dtype, n.inputs[i]->shape);
        continue;
      }
      Shape s = Shape::unknown_rank();
      const Shape& in = n.inputs[i]->shape;
      auto axes = n.attr_ints("scan_input_axes", {});
      int64_t axis = i - n_state < axes.size() ? axes[i - n_state] : 0;
      int64_t r = static_cast<int64_t>(in.rank());
      if (in.rank_known && axis >= -r && axis < r) {
        s = in;
        s.dims.erase(s.dims.begin() + (axis < 0 ? axis + r : axis));
      }
      seed(body.inputs[i], n.inputs[i]->dtype, s);
    }
  }
}

}  // namespace kiln::ops::control
