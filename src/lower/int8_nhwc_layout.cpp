// Pixel-major INT8 activations between convolutions (kernels/int8.h, Conv2dShape::x_nhwc /
// y_nhwc). The "pixels" path computes output pixels x channels: reading an NCHW input it first
// transposes it into a pixel-major image, and writing NCHW it transposes every tile through a
// buffer before its epilogue. A tensor that only such convolutions produce and read skips both:
// its producer requantizes straight from the registers into [N][H][W][C] rows, and its readers
// take their windows in place (a copy with the padding border when padded). qconv_bench (AVX-512
// VNNI, Zen 4, resnet50's shapes, NHWC in and out against the NCHW paths): 0.83-1.0x the time on
// one thread, 0.76-1.04x on two.
//
// A tensor is pixel-major when
//   - it is produced by an int8 MaxPool on the fast kernel (ops::qmax_pool_geometry: it pools
//     its NCHW input, then transposes the pooled bytes; the resnets' layer1 then starts
//     pixel-major), or by a kiln.QConv the compiled runtime runs on its INT8 kernels (fast_qconv:
//     4-D u8/i8 input, static but for the batch, constant i8 weight and f32 scales, Relu/Clip at
//     most, a residual of the output's shape) whose shape this CPU's table runs pixel-major
//     (qconv_nhwc_supported: group 1 with input channels in quads on the pixels path's fused
//     epilogue, or depthwise on QKernels::depthwise_nhwc);
//   - it is not a graph output and every reader is such a QConv of this graph, reading it as X
//     or as the residual Z, or a per-tensor DequantizeLinear whose floats only
//     GlobalAveragePools read (dequantize_to_pools: its output is pixel-major too, and the pools
//     get x_nhwc);
//   - a convolution's residual and its output agree (the epilogue reads Z in the output's
//     layout), and so do a DequantizeLinear's input and output;
//   - a convolution reading pixel-major writes pixel-major (the other way needs a transposing
//     buffer); a depthwise one reads pixel-major exactly when it writes it; and a non-depthwise
//     convolution's output channels fill whole column panels of the tile;
// solved by dropping tensors until nothing changes.
// The reference kernels refuse a QConv, pool or GlobalAveragePool marked so (they read NCHW), so
// a step the fast kernel declined fails with one line instead of computing on transposed bytes.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/kernels/int8.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/quantized.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

// A 4-D shape's dims with a symbolic batch counted as 1, or nothing.
std::optional<std::vector<int64_t>> dims_4d(const Shape& s) {
  std::optional<std::vector<int64_t>> d = ops::dims_batch_as_one(s);
  return d && d->size() == 4 ? d : std::nullopt;
}

// The shape the compiled runtime's QConv kernel would run n with (runtime/fast_qconv.cpp's
// conditions), with its table, or nullopt.
struct QConvPlan {
  const kernels::int8::QKernels* k;
  kernels::Conv2dShape s;
};
std::optional<QConvPlan> fast_qconv(const Node& n) {
  if (n.domain != ops::kKilnDomain || n.op != "QConv" || n.outputs.empty() || !n.outputs[0]) return std::nullopt;
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  const Value* sc = n.input(2);
  if (!x || !w || !sc || !w->is_constant() || !sc->is_constant()) return std::nullopt;
  const std::optional<std::vector<int64_t>> xd = dims_4d(x->shape);
  if (!xd || (x->dtype != DType::u8 && x->dtype != DType::i8)) return std::nullopt;
  const Tensor& wt = *w->initializer;
  if (wt.dtype() != DType::i8 || wt.dims().size() != 4) return std::nullopt;
  const int64_t channels = wt.dim(0);
  const Tensor& st = *sc->initializer;
  if (st.dtype() != DType::f32 || (st.numel() != 1 && st.numel() != channels)) return std::nullopt;
  if (const Value* b = n.input(3)) {
    if (!b->is_constant() || b->initializer->numel() != channels ||
        (b->initializer->dtype() != DType::i32 && b->initializer->dtype() != DType::f32))
      return std::nullopt;
  }
  if (!ops::quant_attrs(n).clamp_only) return std::nullopt;
  if (const Value* z = n.input(4); z && z->shape != n.outputs[0]->shape) return std::nullopt;
  QConvPlan p{&kernels::int8::qkernels_for_signed(wt.data<int8_t>(), wt.numel()),
              ops::fused_conv_shape(n, *xd, wt.dims())};
  if (!kernels::int8::qconv_nhwc_supported(*p.k, p.s)) return std::nullopt;
  // Output channels in whole panels of the tile's columns: mobilenet_v2's 16-, 24- and
  // 40-channel layers would compute 32 or 64. (Depthwise layers take 16 channels a vector,
  // masked past the last.)
  if (p.s.group == 1 && p.s.K % p.k->nr != 0) return std::nullopt;
  return p;
}

// A per-tensor DequantizeLinear of a static 4-D u8/i8 tensor whose float output only
// GlobalAveragePools read (static f32 4-D, not a graph output): elementwise with one scale and
// zero point, it computes the same floats in either layout, and the pools average pixel-major
// rows (kernels::global_average_pool_pixel_major) into the same [N, C, 1, 1]. A network's last
// convolution reaches its classifier this way (resnet50 INT8: DequantizeLinear,
// GlobalAveragePool, QuantizeLinear, QMatMul), and through the residual ties its whole last
// stage would otherwise stay NCHW.
bool dequantize_to_pools(const Graph& g, const Node& n, const std::set<const Value*>& outputs) {
  if (!n.domain.empty() || n.op != "DequantizeLinear" || n.outputs.size() != 1 || !n.outputs[0]) return false;
  const Value* x = n.input(0);
  if (!x || (x->dtype != DType::u8 && x->dtype != DType::i8) || !dims_4d(x->shape)) return false;
  for (size_t i = 1; i < n.inputs.size(); ++i)
    if (const Value* v = n.input(i); v && (!v->is_constant() || v->initializer->numel() != 1)) return false;
  const Value* y = n.outputs[0];
  if (outputs.count(y)) return false;
  const std::vector<Node*> users = g.users(y);
  if (users.empty()) return false;
  for (const Node* u : users) {
    if (!u->domain.empty() || u->op != "GlobalAveragePool" || u->input(0) != y) return false;
    if (y->dtype != DType::f32 || !dims_4d(y->shape)) return false;
  }
  return true;
}

}  // namespace

bool int8_nhwc_enabled() {
  return env_switch_on("KILN_INT8_NHWC");
}

int assign_int8_nhwc_layout(Graph& g) {
  if (!int8_nhwc_enabled()) return 0;
  const std::set<const Value*> outputs(g.outputs.begin(), g.outputs.end());
  std::set<const Node*> capable, dequantize, pools, own;
  for (const auto& up : g.nodes()) {
    own.insert(up.get());
    if (fast_qconv(*up)) capable.insert(up.get());
    else if (dequantize_to_pools(g, *up, outputs)) dequantize.insert(up.get());
    else if (ops::qmax_pool_geometry(*up, true)) pools.insert(up.get());
  }
  // Candidates: what such a QConv or an int8 max pool writes and only such QConvs (X or Z) or
  // such a DequantizeLinear read; a DequantizeLinear's output (its pools read it).
  std::set<const Value*> nhwc;
  std::set<const Node*> producers = capable;
  producers.insert(pools.begin(), pools.end());
  for (const Node* p : producers) {
    const Value* v = p->outputs[0];
    if (outputs.count(v)) continue;
    const std::vector<Node*> users = g.users(v);
    bool ok = !users.empty();
    for (const Node* u : users) {
      ok = ok && own.count(u) && (capable.count(u) || dequantize.count(u));
      for (size_t i = 0; ok && i < u->inputs.size(); ++i)
        if (u->inputs[i] == v) ok = i == 0 || (i == 4 && capable.count(u));
    }
    if (ok) nhwc.insert(v);
  }
  for (const Node* d : dequantize) nhwc.insert(d->outputs[0]);
  // Ties: a convolution's residual and output; a DequantizeLinear's input and output.
  for (bool changed = true; changed;) {
    changed = false;
    auto tie = [&](const Value* a_v, const Value* b_v) {
      const bool a = nhwc.count(a_v) > 0, b = nhwc.count(b_v) > 0;
      if (a == b) return;
      nhwc.erase(a ? a_v : b_v);
      changed = true;
    };
    for (const Node* n : capable) {
      if (const Value* z = n->input(4)) tie(z, n->outputs[0]);
      // A convolution that reads pixel-major writes pixel-major: writing NCHW from the pixel
      // tiles goes through a transposing buffer and a second epilogue pass, which cost a
      // 16 -> 96 1x1 at 112x112 (mobilenet_v2's expansion, read by a depthwise layer) 3.8x
      // its planes path's time. A convolution may still read NCHW and write pixel-major (the
      // first of a chain, transposing its input once: resnet50's layer1 after the max pool).
      if (nhwc.count(n->input(0)) && !nhwc.count(n->outputs[0])) {
        nhwc.erase(n->input(0));
        changed = true;
      }
      // A depthwise one (QKernels::depthwise_nhwc) reads and writes pixel-major or neither.
      if (n->attr_i("group", 1) != 1) tie(n->input(0), n->outputs[0]);
    }
    for (const Node* d : dequantize) tie(d->input(0), d->outputs[0]);
  }
  for (const Node* d : dequantize) {
    if (!nhwc.count(d->outputs[0])) continue;
    for (Node* u : g.users(d->outputs[0])) u->attrs["x_nhwc"] = int64_t{1};
  }
  for (const auto& up : g.nodes()) {
    Node& n = *up;
    if (pools.count(&n) && nhwc.count(n.outputs[0])) n.attrs["y_nhwc"] = int64_t{1};
    if (!capable.count(&n)) continue;
    const bool x = nhwc.count(n.input(0)) > 0, y = nhwc.count(n.outputs[0]) > 0;
    if (!x && !y) continue;
    if (x) n.attrs["x_nhwc"] = int64_t{1};
    if (y) n.attrs["y_nhwc"] = int64_t{1};
  }
  return static_cast<int>(nhwc.size());
}

}  // namespace kiln::lower
