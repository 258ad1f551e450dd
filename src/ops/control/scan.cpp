// Scan (opset 9+): inputs are N initial states then M scan inputs. Iteration t feeds the
// states and slice t of every scan input (along its scan axis, from the end when its
// direction is 1) to `body`, whose outputs are the N next states then K per-iteration
// values. Node outputs: final states, then the K values stacked along their output axis
// (in reverse iteration order when the output direction is 1).
// Opset 8 Scan (batch axis + sequence_lens input) is a different op and is refused.
#include "subgraph.h"

namespace kiln::ops {
namespace {

struct ScanLayout {
  size_t n_state = 0, n_scan = 0, n_out = 0;  // N, M, K
  std::vector<int64_t> in_axes, in_dirs, out_axes, out_dirs;
};

template <typename Ctx>
ScanLayout layout_of(const Ctx& c, size_t num_inputs, size_t num_outputs) {
  const Node& n = c.node();
  if (c.opset() < 9)
    c.fail("opset 8 Scan (batch axis + sequence_lens) is not supported; re-export the model with opset >= 9");
  ScanLayout l;
  int64_t m = n.attr_i("num_scan_inputs", -1);
  if (m < 1 || m > static_cast<int64_t>(num_inputs))
    c.fail(str_cat("num_scan_inputs is ", m, ", must be in 1..", num_inputs, " (the number of inputs)"));
  l.n_scan = static_cast<size_t>(m);
  l.n_state = num_inputs - l.n_scan;
  if (num_outputs < l.n_state) c.fail(str_cat("has ", l.n_state, " states but only ", num_outputs, " outputs"));
  l.n_out = num_outputs - l.n_state;
  auto read = [&](const char* name, size_t count, bool is_dir) {
    auto v = n.attr_ints(name, std::vector<int64_t>(count, 0));
    if (v.size() != count) c.fail(str_cat(name, " has ", v.size(), " entries, needs ", count));
    for (int64_t d : v)
      if (is_dir && d != 0 && d != 1) c.fail(str_cat(name, " entries must be 0 or 1, got ", d));
    return v;
  };
  l.in_axes = read("scan_input_axes", l.n_scan, false);
  l.in_dirs = read("scan_input_directions", l.n_scan, true);
  l.out_axes = read("scan_output_axes", l.n_out, false);
  l.out_dirs = read("scan_output_directions", l.n_out, true);
  return l;
}

template <typename Ctx>
void check_body_arity(const Ctx& c, const Graph& body, const ScanLayout& l) {
  if (body.inputs.size() != l.n_state + l.n_scan)
    c.fail(str_cat("body takes ", body.inputs.size(), " inputs, needs ", l.n_state, " states + ", l.n_scan,
                   " scan inputs"));
  if (body.outputs.size() != l.n_state + l.n_out)
    c.fail(str_cat("body gives ", body.outputs.size(), " outputs, needs ", l.n_state, " states + ", l.n_out,
                   " scan outputs"));
}

void infer_scan(InferContext& c) {
  ScanLayout l = layout_of(c, c.num_inputs(), c.num_outputs());
  const Graph& body = control::body_attr(c.node(), "body");
  check_body_arity(c, body, l);
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (!c.has_input(i)) c.fail(str_cat("input ", i, " is missing (Scan has no optional inputs)"));
  Dim len = Dim::unknown();
  for (size_t j = 0; j < l.n_scan; ++j) {
    const Shape& s = c.in_shape(l.n_state + j);
    if (!s.rank_known) continue;
    int64_t axis = normalize_axis(l.in_axes[j], static_cast<int64_t>(s.rank()), c.node());
    if (len.is_unknown()) len = s.dims[axis];
    else if (len.is_static() && s.dims[axis].is_static() && len != s.dims[axis])
      c.fail(str_cat("scan inputs have different lengths ", len.str(), " and ", s.dims[axis].str()));
  }
  for (size_t i = 0; i < l.n_state; ++i) {
    const Value& out = *body.outputs[i];
    DType dt = control::merge_dtypes(c, c.in_dtype(i), out.dtype, str_cat("state ", i));
    if (dt == DType::undefined) dt = c.in_dtype(i);
    c.set_output(i, dt, control::merge_shapes(c.in_shape(i), out.shape));
  }
  for (size_t j = 0; j < l.n_out; ++j) {
    const Value& out = *body.outputs[l.n_state + j];
    Shape s = Shape::unknown_rank();
    if (out.shape.rank_known) {
      s = out.shape;
      int64_t axis = normalize_axis(l.out_axes[j], static_cast<int64_t>(s.rank()) + 1, c.node());
      s.dims.insert(s.dims.begin() + axis, len);
    }
    c.set_output(l.n_state + j, out.dtype, s);
  }
}

void kernel_scan(KernelContext& c) {
  ScanLayout l = layout_of(c, c.num_inputs(), c.num_outputs());
  const Graph& body = control::body_attr(c.node(), "body");
  check_body_arity(c, body, l);
  std::vector<Tensor> states;
  for (size_t i = 0; i < l.n_state; ++i) states.push_back(c.input(i));
  std::vector<int64_t> axes(l.n_scan);
  int64_t len = -1;
  for (size_t j = 0; j < l.n_scan; ++j) {
    const Tensor& x = c.input(l.n_state + j);
    axes[j] = normalize_axis(l.in_axes[j], static_cast<int64_t>(x.rank()), c.node());
    if (len < 0) len = x.dim(axes[j]);
    else if (x.dim(axes[j]) != len)
      c.fail(str_cat("scan input ", j, " has length ", x.dim(axes[j]), " along its axis, scan input 0 has ", len));
  }
  std::vector<std::vector<Tensor>> scans(l.n_out);
  for (int64_t t = 0; t < len; ++t) {
    std::vector<Tensor> ins = states;
    for (size_t j = 0; j < l.n_scan; ++j)
      ins.push_back(control::take_along(c.input(l.n_state + j), axes[j], l.in_dirs[j] ? len - 1 - t : t));
    std::vector<Tensor> outs = control::run_body(c, body, "body", ins, l.n_state + l.n_out);
    for (size_t i = 0; i < l.n_state; ++i) {
      if (outs[i].dtype() != states[i].dtype())
        c.fail(str_cat("body output ", i, " (state) is ", dtype_name(outs[i].dtype()), ", the state is ",
                       dtype_name(states[i].dtype())));
      states[i] = std::move(outs[i]);
    }
    for (size_t j = 0; j < l.n_out; ++j) scans[j].push_back(std::move(outs[l.n_state + j]));
  }
  for (size_t i = 0; i < l.n_state; ++i) c.set_output(i, std::move(states[i]));
  for (size_t j = 0; j < l.n_out; ++j) {
    std::string what = str_cat("scan output ", j);
    const Value& decl = *body.outputs[l.n_state + j];
    std::vector<int64_t> empty_dims;
    DType empty_dt = decl.dtype;
    if (scans[j].empty()) {
      empty_dims = control::dims_for_empty(c, decl, what);
      if (empty_dt == DType::undefined) c.fail(str_cat(what, ": zero iterations and its dtype is unknown"));
    }
    int64_t rank = static_cast<int64_t>(scans[j].empty() ? empty_dims.size() : scans[j][0].rank());
    int64_t axis = normalize_axis(l.out_axes[j], rank + 1, c.node());
    c.set_output(l.n_state + j,
                 control::stack_along(c, scans[j], axis, l.out_dirs[j] == 1, empty_dims, empty_dt, what));
  }
}

}  // namespace

OpDef def_Scan() {
  return {.name = "Scan",
          .since = 8,
          .min_inputs = 1,
          .max_inputs = -1,
          .min_outputs = 1,
          .max_outputs = -1,
          .attrs = {{"body", AttrKind::Graph, true},
                    {"num_scan_inputs", AttrKind::Int, true},
                    {"scan_input_axes", AttrKind::Ints},
                    {"scan_input_directions", AttrKind::Ints},
                    {"scan_output_axes", AttrKind::Ints},
                    {"scan_output_directions", AttrKind::Ints},
                    {"directions", AttrKind::Ints}},
          .infer = infer_scan,
          .cost = cost_data_movement,
          .kernel = kernel_scan,
          .doc = "iterates a body graph over slices of scan inputs, carrying states and stacking outputs"};
}

}  // namespace kiln::ops
