// Loop: runs `body` while (trip < M, when M is given) and (cond, when cond is given).
// Body inputs: (iteration_num i64, cond bool, carried...); body outputs: (cond, carried...,
// scan outputs...). Node outputs: final carried values, then each scan output stacked over
// iterations along a new axis 0. When the cond input is omitted the body's cond output is
// ignored (a for loop), as the spec's pseudo-code says ("cond = ...; // ignored"); note that
// ONNX Runtime 1.x stops on a false body cond even then. With neither M nor cond the loop only
// ends by a runaway guard.
#include "subgraph.h"

namespace kiln::ops {
namespace {

// A loop with no bound that is still going after this many iterations is a broken model.
constexpr int64_t kMaxIterations = int64_t{1} << 31;

size_t carried_count(size_t num_inputs) { return num_inputs >= 2 ? num_inputs - 2 : 0; }

void infer_loop(InferContext& c) {
  if (c.has_input(0) && c.in_dtype(0) != DType::undefined && c.in_dtype(0) != DType::i64)
    c.fail(str_cat("M (max trip count) must be i64, got ", dtype_name(c.in_dtype(0))));
  if (c.has_input(1) && c.in_dtype(1) != DType::undefined && c.in_dtype(1) != DType::boolean)
    c.fail(str_cat("cond must be bool, got ", dtype_name(c.in_dtype(1))));
  const Graph& body = control::body_attr(c.node(), "body");
  size_t n = carried_count(c.num_inputs());
  if (c.num_outputs() < n) c.fail(str_cat("has ", n, " loop-carried inputs but only ", c.num_outputs(), " outputs"));
  size_t k = c.num_outputs() - n;
  if (body.inputs.size() != 2 + n)
    c.fail(str_cat("body takes ", body.inputs.size(), " inputs, needs 2 + ", n, " loop-carried = ", 2 + n));
  if (body.outputs.size() != 1 + n + k)
    c.fail(str_cat("body gives ", body.outputs.size(), " outputs, needs cond + ", n, " carried + ", k,
                   " scan = ", 1 + n + k));
  DType body_cond = body.outputs[0]->dtype;
  if (body_cond != DType::undefined && body_cond != DType::boolean)
    c.fail(str_cat("body output 0 (cond) must be bool, got ", dtype_name(body_cond)));
  for (size_t i = 0; i < n; ++i) {
    if (!c.has_input(2 + i)) c.fail(str_cat("loop-carried input ", i, " is missing"));
    const Value& out = *body.outputs[1 + i];
    DType dt = control::merge_dtypes(c, c.in_dtype(2 + i), out.dtype, str_cat("loop-carried value ", i));
    if (dt == DType::undefined) dt = c.in_dtype(2 + i);
    c.set_output(i, dt, control::merge_shapes(c.in_shape(2 + i), out.shape));
  }
  // Exactly M iterations when M is known and no cond can stop the loop early.
  Dim trips = Dim::unknown();
  if (const Tensor* m = c.in_const(0); m && !c.has_input(1) && m->numel() == 1)
    trips = Dim(std::max<int64_t>(0, m->as_int64(0)));
  for (size_t j = 0; j < k; ++j) {
    const Value& out = *body.outputs[1 + n + j];
    Shape s = Shape::unknown_rank();
    if (out.shape.rank_known) {
      s = out.shape;
      s.dims.insert(s.dims.begin(), trips);
    }
    c.set_output(n + j, out.dtype, s);
  }
}

void kernel_loop(KernelContext& c) {
  const Graph& body = control::body_attr(c.node(), "body");
  bool has_m = c.has_input(0), has_cond = c.has_input(1);
  int64_t max_trips = has_m ? control::read_i64(c, c.input(0), "M (max trip count)") : 0;
  bool cond = has_cond ? control::read_bool(c, c.input(1), "cond") : true;
  size_t n = carried_count(c.num_inputs());
  if (c.num_outputs() < n) c.fail(str_cat("has ", n, " loop-carried inputs but only ", c.num_outputs(), " outputs"));
  size_t k = c.num_outputs() - n;

  std::vector<Tensor> carried;
  for (size_t i = 0; i < n; ++i) {
    if (!c.has_input(2 + i)) c.fail(str_cat("loop-carried input ", i, " is missing"));
    carried.push_back(c.input(2 + i));
  }
  std::vector<std::vector<Tensor>> scans(k);
  for (int64_t trip = 0; (!has_m || trip < max_trips) && cond; ++trip) {
    if (trip >= kMaxIterations)
      c.fail(str_cat("still running after ", kMaxIterations, " iterations (runaway loop: ",
                     has_m ? "M is huge" : "no M", has_cond ? ", cond never false)" : ", no cond)"));
    std::vector<Tensor> ins{Tensor::scalar<int64_t>(trip), Tensor::scalar<bool>(cond)};
    ins.insert(ins.end(), carried.begin(), carried.end());
    std::vector<Tensor> outs = control::run_body(c, body, "body", ins, 1 + n + k);
    if (has_cond) cond = control::read_bool(c, outs[0], "body output 0 (cond)");
    for (size_t i = 0; i < n; ++i) {
      if (outs[1 + i].dtype() != carried[i].dtype())
        c.fail(str_cat("body output ", 1 + i, " (loop-carried) is ", dtype_name(outs[1 + i].dtype()),
                       ", the loop carries ", dtype_name(carried[i].dtype())));
      carried[i] = std::move(outs[1 + i]);
    }
    for (size_t j = 0; j < k; ++j) scans[j].push_back(std::move(outs[1 + n + j]));
  }
  for (size_t i = 0; i < n; ++i) c.set_output(i, std::move(carried[i]));
  for (size_t j = 0; j < k; ++j) {
    std::string what = str_cat("scan output ", j);
    const Value& decl = *body.outputs[1 + n + j];
    std::vector<int64_t> empty_dims;
    DType empty_dt = decl.dtype != DType::undefined ? decl.dtype : c.node().outputs[n + j] ? c.node().outputs[n + j]->dtype : DType::undefined;
    if (scans[j].empty()) {
      empty_dims = control::dims_for_empty(c, decl, what);
      if (empty_dt == DType::undefined) c.fail(str_cat(what, ": zero iterations and its dtype is unknown"));
    }
    c.set_output(n + j, control::stack_along(c, scans[j], 0, false, empty_dims, empty_dt, what));
  }
}

}  // namespace

OpDef def_Loop() {
  return {.name = "Loop",
          .since = 1,
          .min_inputs = 0,  // M and cond are optional; carried values follow them
          .max_inputs = -1,
          .min_outputs = 1,
          .max_outputs = -1,
          .attrs = {{"body", AttrKind::Graph, true}},
          .infer = infer_loop,
          .cost = cost_data_movement,
          .kernel = kernel_loop,
          .doc = "runs a body graph a number of times / while a condition holds, with carried and scan outputs"};
}

}  // namespace kiln::ops
