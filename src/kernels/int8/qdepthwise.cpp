// INT8 depthwise convolutions through QKernels::depthwise_block: blocks of 8 channels of an
// image, shared out over threads as bands of output rows x groups of blocks (depthwise_parts.h,
// as the f32 kernels), each part with its own padded plane whose padding holds the zero point.
#include <algorithm>
#include <cstdint>

#include "depthwise_parts.h"
#include "kiln/kernels/int8.h"
#include "qconv_internal.h"
#include "qepilogue_dispatch.h"

namespace kiln::kernels::int8 {
namespace {
constexpr int kLanes = 8;
}  // namespace

bool qconv_is_depthwise(const QKernels& k, const Conv2dShape& s) {
  const bool depthwise = (s.group == s.C && s.C == s.K) || (s.C == 1 && s.group == 1);
  return k.depthwise_block && depthwise && s.R * s.S <= qdepthwise_max_taps;
}

namespace detail {

// Channels per packed block: 8 for the channel-blocked NCHW kernel, 16 for the pixel-major one
// (QKernels::depthwise_nhwc, a zmm of one pixel's channels).
int64_t packed_lanes(const Conv2dShape& s) { return s.x_nhwc || s.y_nhwc ? 16 : kLanes; }

size_t qdepthwise_packed_weight_bytes(const Conv2dShape& s) {
  const int64_t lanes = packed_lanes(s);
  return sizeof(float) * static_cast<size_t>(ceil_div(s.K, lanes) * lanes * s.R * s.S);
}

void qdepthwise_pack_weight(const Conv2dShape& s, const int8_t* w, uint8_t* packed) {
  const int64_t RS = s.R * s.S, lanes = packed_lanes(s);
  float* out = reinterpret_cast<float*>(packed);
  std::fill(out, out + ceil_div(s.K, lanes) * lanes * RS, 0.f);  // lanes past K stay zero
  for (int64_t c = 0; c < s.K; ++c)
    for (int64_t t = 0; t < RS; ++t) out[((c / lanes) * RS + t) * lanes + c % lanes] = w[c * RS + t];
}

// None: the parts run on their threads' own scratch (for_depthwise_parts says why).
size_t qdepthwise_workspace_bytes(const Conv2dShape&, int) { return 0; }

void qdepthwise(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* /*workspace: none*/, int threads) {
  namespace kd = kernels::detail;
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const int64_t OH = s.out_h(), OW = s.out_w(), RS = s.R * s.S, blocks = ceil_div(s.K, kLanes);
  const int64_t units = kd::depthwise_units(s, kLanes, true);
  const DepthwisePlane g = kd::depthwise_geometry(s);
  threads = threads_for_work(static_cast<double>(s.N * s.K) * (OH * OW * RS + s.H * s.W), threads);
  const kd::DepthwiseSplit split = kd::depthwise_split(s, threads, units);
  const int64_t slot = kd::depthwise_slot(s, split, kLanes, true);
  const int64_t x_plane = s.C == 1 ? 0 : s.H * s.W;  // one input channel: every lane reads image n's plane
  const float* w = reinterpret_cast<const float*>(packed_w);  // block b's weights at w + b * 8 * RS
  const size_t osize = out_size(e.out), rsize = e.residual_type == QType::F32 ? 4 : 1;
  kd::for_depthwise_parts(g, split, units, slot, threads, [&](const kd::DepthwiseBand& bd, int64_t ub, int64_t ue,
                                                              float* part) {
    float* scratch = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(part) + 63) & ~uintptr_t{63});
    const DepthwiseBlockScratch sb = depthwise_block_scratch(bd.g, kLanes);
    kd::fill_block_padding(bd.g, sb, kLanes, static_cast<float>(pad), scratch + sb.plane);
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t n = u / blocks, c0 = (u % blocks) * kLanes;
      const int nc = static_cast<int>(std::min<int64_t>(kLanes, s.K - c0));
      const int64_t first = (n * s.K + c0) * OH * OW + bd.out_offset;  // output element of the block's start
      QEpilogue eb = e;
      eb.scale = e.scale + c0;
      if (e.bias) eb.bias = e.bias + c0;
      if (e.bias_f) eb.bias_f = e.bias_f + c0;
      if (e.residual) eb.residual = static_cast<const char*>(e.residual) + first * rsize, eb.ldr = OH * OW;
      k.depthwise_block(bd.g, x + kd::depthwise_input_plane(s, n * s.K + c0) * s.H * s.W + bd.x_offset, x_plane, nc,
                        flip, w + c0 * RS, scratch, eb, static_cast<char*>(y) + first * osize, OH * OW);
    }
  });
}

}  // namespace detail
}  // namespace kiln::kernels::int8
