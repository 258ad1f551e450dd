// How a depthwise convolution is shared out over threads, for the f32 kernels (conv.cpp) and the
// INT8 ones (int8/qdepthwise.cpp): the plane geometry, bands of output rows x groups of planes
// (or channel blocks), each part on the scratch of the thread running it.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::detail {

DepthwisePlane depthwise_geometry(const Conv2dShape& s);

// Channel-blocked (KernelTable::depthwise_block) on tables of 8 or more lanes, for any stride
// and dilation; the plane kernel (and the phase planes past stride 2) on narrower ones. On Zen 3
// (conv_bench) every mobilenet_v2 and efficientnet_b0 depthwise layer ran faster blocked: 0.4-0.9x
// the plane kernel's time at one thread (the 7x7 and 14x14 maps gained most), 0.4-0.85x at two.
// With 16 lanes (AVX-512, Zen 5) the same holds once the 16x16 register transpose is inlined
// and unrolled (it was an out-of-line call through memory, and outputs of 28x28 and up then ran
// faster on planes): blocked ran 0.65-1.0x the plane kernel's time on every layer of both nets at
// one thread (112x112 3x3 166 -> 142 us, 56x56 189 -> 150, 28x28 5x5 147 -> 95; conv_bench), and
// within the two-thread runs' noise (0.76-1.1x) at two.
inline bool depthwise_blocked(const KernelTable& t) { return t.depthwise_block && t.simd_width >= 8; }

// A depthwise weight's packing (conv_pack_weight): [K][RS], then, when K is a multiple of 8, the
// pair kernels' copy (TileEpilogue::pair_weights) from here on: per 8-channel block, per tap,
// the block's 8 weights twice.
inline bool depthwise_has_pair_copy(const Conv2dShape& s) { return s.K % kConvBlock == 0; }
inline int64_t depthwise_pair_copy_at(const Conv2dShape& s) { return s.K * s.R * s.S; }
// The pair copy of the 8-channel block from channel c0 on (a multiple of 8) in packed weight w.
inline const float* depthwise_pair_weights(const Conv2dShape& s, const float* w, int64_t c0) {
  return w + depthwise_pair_copy_at(s) + c0 / kConvBlock * s.R * s.S * 2 * kConvBlock;
}

// The epilogue of the output channels from c on (one with a Scalar bias, a block with PerRow):
// epi's scale and activation, the residual from `res_offset` with rows `ldr` apart.
TileEpilogue depthwise_epilogue(const Epilogue& epi, int64_t c, TileEpilogue::Bias bias_mode, int64_t res_offset,
                                int64_t ldr);

// Depthwise here also covers one input channel feeding K output channels (digits_cnn's first
// layer, 1 -> 16): output plane `out_plane` (image n, channel k) reads input plane n * C + k,
// or image n's only plane.
inline int64_t depthwise_input_plane(const Conv2dShape& s, int64_t out_plane) {
  return out_plane / s.K * s.C + (s.C == 1 ? 0 : out_plane % s.K);
}

// The parts of a depthwise call: bands of output rows x groups of planes, band-major, so
// that pool thread t (which owns the t-th share of the parts, see parallel.h) computes the t-th
// share of every plane's rows, the rows the convolution before it wrote on that thread, instead
// of whole planes the other thread wrote. Bands keep at least kMinBandRows rows (each re-reads
// R - 1 halo rows and sets up its own padded copy); planes too short for that are shared out by
// groups of planes instead. 16, not 4: on the 2-vCPU Zen 3 host, mobilenet_v2 / efficientnet_b0
// at 2 threads ran 0.952x / 0.968x with 28x28 and smaller planes shared out whole (bands of 4-7
// rows cost more in per-band set-up than they saved in locality).
struct DepthwiseSplit {
  int64_t bands = 1, groups = 1;
  int64_t parts() const { return bands * groups; }
};
// `units`: the planes (or channel blocks) the groups share out.
DepthwiseSplit depthwise_split(const Conv2dShape& s, int threads, int64_t units);
// Whether depthwise_split makes one band at every thread count (planes shorter than two bands).
bool depthwise_never_bands(const Conv2dShape& s);

// Output rows [oh0, oh1) of a plane as a plane of its own: the input rows its windows reach
// (clipped to the input; the rest is padding) and the offsets of its input and output rows.
struct DepthwiseBand {
  DepthwisePlane g;
  int64_t x_offset = 0, out_offset = 0;
  int64_t index = 0;  // which band of the split (for_depthwise_parts)
};
DepthwiseBand depthwise_band(const DepthwisePlane& whole, int64_t oh0, int64_t oh1);

// What the parts share out: the planes, or (blocked) blocks of `lanes` channels of an image.
inline int64_t depthwise_units(const Conv2dShape& s, int lanes, bool blocked) {
  return blocked ? s.N * ((s.K + lanes - 1) / lanes) : s.N * s.K;
}

// Floats of one part's scratch, the tallest band's: the plane kernel's padded plane, or the
// blocked kernel's scratch plus a line to align it.
int64_t depthwise_slot(const Conv2dShape& s, const DepthwiseSplit& d, int lanes, bool blocked);

// Runs body(band, first unit, end unit, slot) for each part of `split` (its band of output rows
// and its share of `units`: planes or channel blocks), each part on `slot_floats` of scratch of
// the thread running it: a vector of that thread's, kept between calls, not a slot of the
// arena. Arena slots are laid over the previous layers' workspaces, so a part's scratch was
// often lines the other core had written last, and every write to it waited for them:
// mobilenet_v2's depthwise layers took 1.31-1.42 ms at 2 threads in the model against 1.0 at 1
// (`conv_bench`, whose workspace stays with the same threads, scaled them 1.6-1.9x); with the
// threads' own scratch 1.04 ms, and the models (paired, 2 threads) mobilenet_v2 0.943x,
// efficientnet_b0 0.962x.
template <class F>
void for_depthwise_parts(const DepthwisePlane& g, const DepthwiseSplit& split, int64_t units, int64_t slot_floats,
                         int threads, F&& body) {
  const int64_t parts = split.parts();
  const int region_threads = std::min<int>(threads, static_cast<int>(parts));
  // One band: the parts are shares of the units, cut smaller toward the end of each thread's
  // share (tapered_start). (Bands keep even rows: the scratch is sized for the tallest.)
  const bool taper = split.bands == 1;
  auto unit_start = [&](int64_t group) {
    return taper ? tapered_start(units, split.groups, region_threads, group) : units * group / split.groups;
  };
  parallel_for(parts, region_threads, [&](int64_t pb, int64_t pe) {
    thread_local std::vector<float> own;
    if (static_cast<int64_t>(own.size()) < slot_floats) own.resize(slot_floats);
    for (int64_t part = pb; part < pe; ++part) {
      const int64_t band = part / split.groups, group = part % split.groups;
      DepthwiseBand bd = depthwise_band(g, g.OH * band / split.bands, g.OH * (band + 1) / split.bands);
      bd.index = band;
      body(bd, unit_start(group), unit_start(group + 1), own.data());
    }
  });
}

// One image's `bands` bands of output rows (a multiple of `threads`) as the threads' shares of its
// `rows` rows, sized by their measured speeds on the region `key` (parallel_shares), each share
// cut in bands / threads bands of even rows run in order: band(oh0, oh1). The banded pairs
// (depthwise + projection, expand + depthwise) run their one-image bands this way.
template <class F>
void for_share_bands(int64_t rows, int64_t bands, int threads, const void* key, F&& band) {
  const int64_t each = bands / threads;
  parallel_shares(
      rows, threads,
      [&](int64_t r0, int64_t r1) {
        for (int64_t b = 0; b < each; ++b) {
          const int64_t b0 = r0 + (r1 - r0) * b / each, b1 = r0 + (r1 - r0) * (b + 1) / each;
          if (b0 < b1) band(b0, b1);
        }
      },
      key);
}

// The most output rows one band of for_share_bands can hold: a share reaches all rows but one a
// thread else.
inline int64_t share_band_max_rows(int64_t rows, int64_t bands, int threads) {
  return (rows - (threads - 1) + bands / threads - 1) / (bands / threads);
}

}  // namespace kiln::kernels::detail
