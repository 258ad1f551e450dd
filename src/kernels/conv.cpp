// Convolution tactics (conv.h) on the GEMM driver and the depthwise plane kernel.
//   gemm       per image and group: C[K/g, OH·OW] = packed W_g · im2col(x_g), the im2col
//              written block by block into the B panels (conv_im2col.cpp).
//   pointwise  per image: C[K, H·W] = packed W · x (x is B as it is, packed per block).
//   depthwise  per (image, channel) plane: stride-phase planes in the workspace (conv_phase.h),
//              the table's vectorised grid kernel over them, then the epilogue on the plane.
#include "kiln/kernels/conv.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "conv_direct.h"
#include "conv_phase.h"
#include "conv_pixel.h"
#include "depthwise_parts.h"
#include "depthwise_wide.h"
#include "gemm_driver.h"
#include "kiln/ir/error.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels {
namespace {

using detail::ceil_div;
using detail::round_up;
using detail::depthwise_band;
using detail::depthwise_geometry;
using detail::depthwise_input_plane;
using detail::depthwise_slot;
using detail::depthwise_split;
using detail::depthwise_units;
using detail::DepthwiseBand;
using detail::DepthwiseSplit;
using detail::depthwise_blocked;
using detail::depthwise_epilogue;
using detail::depthwise_has_pair_copy;
using detail::depthwise_pair_copy_at;
using detail::for_depthwise_parts;

std::string shape_problem(const Conv2dShape& s) {
  if (s.N < 1 || s.C < 1 || s.H < 1 || s.W < 1 || s.K < 1 || s.R < 1 || s.S < 1) return "empty or negative dimension";
  if (s.stride_h < 1 || s.stride_w < 1 || s.dil_h < 1 || s.dil_w < 1) return "stride and dilation must be >= 1";
  if (s.pad_top < 0 || s.pad_left < 0 || s.pad_bottom < 0 || s.pad_right < 0 || s.y_pad_top < 0 || s.y_pad_left < 0 ||
      s.y_pad_bottom < 0 || s.y_pad_right < 0)
    return "negative padding";
  if (s.group < 1 || s.C % s.group != 0 || s.K % s.group != 0) return "channels not divisible by group";
  if (s.out_h() < 1 || s.out_w() < 1) return "window larger than the padded input";
  return "";
}

// Workspace of the gemm tactic: the phase planes of one group, then (when the grid is wider
// than the output) the output grid of one group. Pointwise needs none: B is the input itself.
struct GemmWorkspace {
  size_t phases = 0, grid = 0;
  size_t total() const { return phases + grid; }
};
GemmWorkspace gemm_workspace(ConvTactic tactic, const Conv2dShape& s) {
  GemmWorkspace w;
  if (tactic == ConvTactic::Gemm) {
    const detail::PhaseGeometry g = detail::phase_geometry(s);
    w.phases = static_cast<size_t>(s.C / s.group * g.per_channel);
    if (g.compact) w.grid = static_cast<size_t>(s.K / s.group * g.grid);
  }
  return w;
}

void conv_gemm(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, const float* x, const float* packed_w,
               float* y, const Epilogue& epi, float* workspace, int threads) {
  const int64_t Cg = s.C / s.group, Kg = s.K / s.group, OH = s.out_h(), OW = s.out_w(), OHW = OH * OW;
  const int64_t KK = Cg * s.R * s.S;
  const size_t wfloats = packed_a_floats_on(t, Kg, KK);
  const bool pointwise = tactic == ConvTactic::Pointwise;
  const detail::PhaseGeometry geo = pointwise ? detail::PhaseGeometry{} : detail::phase_geometry(s);
  const GemmWorkspace wl = gemm_workspace(tactic, s);
  thread_local std::vector<float> own;
  if (!workspace) {
    if (own.size() < wl.total()) own.resize(wl.total());
    workspace = own.data();
  }
  float* phases = workspace;
  float* grid = phases + wl.phases;
  const int64_t N = pointwise ? OHW : geo.grid;
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t g = 0; g < s.group; ++g) {
      const float* xg = x + (n * s.C + g * Cg) * s.H * s.W;
      const int64_t out_off = (n * s.K + g * Kg) * OHW;
      if (!pointwise) {
        const double work = static_cast<double>(Cg) * geo.per_channel;
        parallel_for(Cg, threads_for_work(work, threads), [&](int64_t b, int64_t e) {
          detail::build_phase_planes(t, s, geo, xg + b * s.H * s.W, e - b, phases + b * geo.per_channel);
        });
      }
      Epilogue e = epi;
      e.bias_per_row = true;
      if (e.bias) e.bias += g * Kg;
      if (e.residual) e.residual += out_off, e.ldr = OHW;
      detail::GemmProblem p;
      p.M = Kg, p.N = N, p.K = KK;
      p.a_packed = packed_w + g * wfloats;
      // B is read in place: input planes (pointwise) or phase-plane rows (gemm).
      auto rows = [&](int64_t p0, int64_t kc, const float** out) {
        for (int64_t q = 0; q < kc; ++q)
          out[q] = pointwise ? xg + (p0 + q) * OHW : detail::phase_row(s, geo, phases, Cg, p0 + q);
      };
      p.b_rows = rows;
      p.split = detail::conv_split(s, /*pixels_on_rows=*/false);
      if (pointwise || !geo.compact) {
        p.C = y + out_off, p.ldc = OHW, p.epi = &e;
        detail::gemm_run(t, p, threads);
        continue;
      }
      // The grid is wider than the output: GEMM into the grid, then copy each channel's
      // OH x OW window out and apply the epilogue there (bias per channel, residual NCHW).
      p.C = grid, p.ldc = geo.grid;
      detail::gemm_run(t, p, threads);
      parallel_for(Kg, threads_for_work(static_cast<double>(Kg) * OHW, threads), [&](int64_t kb, int64_t ke) {
        for (int64_t k = kb; k < ke; ++k) {
          TileEpilogue te = detail::tile_epilogue(e, k, 0);
          if (te.bias_mode == TileEpilogue::Bias::PerRow) te.bias_mode = TileEpilogue::Bias::Scalar;
          if (te.residual) te.ldr = OW;
          t.epilogue_copy(grid + k * geo.grid, geo.Wg, y + out_off + k * OHW, OW, OH, OW, te);
        }
      });
    }
}

// Per-thread depthwise scratch: one channel's phase planes, then its output grid.
size_t depthwise_slot_floats(const Conv2dShape& s) {
  const detail::PhaseGeometry g = detail::phase_geometry(s);
  return static_cast<size_t>(g.per_channel + g.grid);
}

// Stride_w 1 or 2: KernelTable::depthwise_plane per plane, the epilogue fused, its zero-padded
// copy in this part's scratch (zeroed once per part).
bool depthwise_by_plane(const Conv2dShape& s) { return s.stride_w <= 2; }

void depthwise_planes(const KernelTable& t, const Conv2dShape& s, const float* x, const float* w, float* y,
                      const Epilogue& epi, int threads) {
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.N * s.K, RS = s.R * s.S;
  const DepthwisePlane g = depthwise_geometry(s);
  // The work counts each plane's padded copy as well as its taps: a stride-2 layer on small
  // planes (mobilenet_v2's 576 x 14x14 -> 7x7: 0.25 M taps) costs mostly copies and set-up, and
  // ran on one thread at the same ~0.1 ms as with two.
  threads = threads_for_work(static_cast<double>(planes) * (OH * OW * RS + s.H * s.W), threads);
  const DepthwiseSplit split = depthwise_split(s, threads, planes);
  const int64_t slot = depthwise_slot(s, split, t.simd_width, false);
  for_depthwise_parts(g, split, planes, slot, threads, [&](const DepthwiseBand& bd, int64_t pb, int64_t pe,
                                                           float* padded) {
    std::fill(padded, padded + slot, 0.f);
    for (int64_t pl = pb; pl < pe; ++pl) {
      const int64_t c = pl % s.K;
      float* out = y + pl * OH * OW + bd.out_offset;
      const TileEpilogue te =
          depthwise_epilogue(epi, c, TileEpilogue::Bias::Scalar, pl * OH * OW + bd.out_offset, OW);
      t.depthwise_plane(bd.g, x + depthwise_input_plane(s, pl) * s.H * s.W + bd.x_offset, w + c * RS, padded, out,
                        te);
    }
  });
}


}  // namespace

// Not where the table has a faster kernel that needs the output apart (the stride-1 aligned
// pairs on rows of 16 or more): mobilenet_v2's 28x28 layers in place on the copy path ran the
// model 1.015x / 1.008x slower at 2 / 1 threads than out of place on the pairs (paired, Zen 4).
// Not on 16-channel blocks: that kernel reads the input rows of a window in place, so an output
// row written over its input row would change the next row's windows.
bool conv_depthwise_in_place(const Conv2dShape& s) {
  const KernelTable& t = kernel_table();
  return depthwise_blocked(t) && s.group == s.C && s.C == s.K && s.out_h() == s.H && s.out_w() == s.W &&
         s.x_blocked && s.y_blocked && s.x_block == kConvBlock && detail::depthwise_never_bands(s) &&
         !(t.depthwise_block_wants_apart && t.depthwise_block_wants_apart(depthwise_geometry(s))) &&
         conv_tactic_unsupported(ConvTactic::Depthwise, s).empty();
}

namespace {

// epi.channel_means of an output the kernel wrote without them (every tactic but the blocked
// depthwise one): the global average pool's own kernels over the output.
void channel_means_after(const KernelTable& t, const Conv2dShape& s, const float* y, float* means, int threads) {
  KILN_CHECK(!s.y_blocked || s.y_block == kConvBlock, "channel means of a 16-channel blocked output are not supported");
  const int64_t OHW = s.out_h() * s.out_w();
  if (s.y_blocked) global_average_pool_blocked_on(t, y, s.N, s.K, OHW, means, threads);
  else global_average_pool_on(t, y, s.N * s.K, OHW, means, threads);
}


// Parts as depthwise_planes's (bands of output rows x groups), over blocks of simd_width
// channels of an image instead of planes.
void depthwise_blocks(const KernelTable& t, const Conv2dShape& s, const float* x, const float* w, float* y,
                      const Epilogue& epi, int threads) {
  const int64_t OH = s.out_h(), OW = s.out_w(), RS = s.R * s.S, lanes = t.simd_width;
  const int64_t blocks = ceil_div(s.K, lanes), units = depthwise_units(s, t.simd_width, true);
  const DepthwisePlane g = depthwise_geometry(s);
  threads = threads_for_work(static_cast<double>(s.N * s.K) * (OH * OW * RS + s.H * s.W), threads);
  const DepthwiseSplit split = depthwise_split(s, threads, units);
  const int64_t slot = depthwise_slot(s, split, t.simd_width, true);
  const int part_threads = static_cast<int>(std::min<int64_t>(threads, split.parts()));
  // Each part claims its bands of the output before it writes them (claim_output_pays), unless
  // they overlap what the kernel reads (a depthwise layer planned in place).
  const bool claim = s.y_blocked && claim_output_pays(part_threads) &&
                     !ranges_overlap(y, s.N * s.K * OH * OW, x, s.N * s.C * s.H * s.W) &&
                     !(epi.residual && ranges_overlap(y, s.N * s.K * OH * OW, epi.residual, s.N * s.K * OH * OW));
  const bool fetch_out = write_prefetch_pays(part_threads);
  // One input channel: every lane reads image n's plane. Channel-blocked input / output
  // ([N][C/8][H][W][8]): a block's channels start at its 8-channel block, whose pixels are 8
  // floats apart, and x_plane / out_plane are the strides between 8-channel blocks.
  KILN_CHECK(!(s.x_blocked || s.y_blocked) || (s.K % kConvBlock == 0 && (s.K == s.C || (s.C == 1 && !s.x_blocked))),
             "channel-blocked depthwise convolution needs C == K, or one input channel (output blocked only), K a "
             "multiple of ", kConvBlock);
  const int64_t x_plane = s.x_blocked ? kConvBlock * s.H * s.W : s.C == 1 ? 0 : s.H * s.W;
  const int64_t out_plane = s.y_blocked ? kConvBlock * OH * OW : OH * OW;
  // epi.channel_means: each part sums the output it writes (a blocked one inside the kernel,
  // TileEpilogue::sums; NCHW right after), band by band in double, sums[band][n * K + k]; the
  // bands are added in order after the region.
  // (The calling thread's vector, reached through a plain pointer: inside the parts, which run
  // on other threads too, the thread_local's name would be each thread's own.)
  thread_local std::vector<double> own_sums;
  if (epi.channel_means) own_sums.assign(static_cast<size_t>(split.bands * s.N * s.K), 0.0);
  double* const sums = own_sums.data();
  for_depthwise_parts(g, split, units, slot, threads, [&](const DepthwiseBand& bd, int64_t ub, int64_t ue,
                                                          float* base) {
    float* scratch = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(base) + 63) & ~uintptr_t{63});
    // The part's blocks share one padded plane, whose padding the first block that copies into
    // it zeroes (KernelTable::depthwise_block).
    bool padding_zeroed = false;
    // Whole planes: the part's blocks are one run of the output, claimed at once (a longer run
    // claims faster); bands: each block's rows of the band, below.
    bool claimed_run = false;
    if (claim && bd.g.OH == OH && ue > ub) {
      const int64_t first = (ub / blocks) * s.K + (ub % blocks) * lanes;
      const int64_t last = ((ue - 1) / blocks) * s.K + std::min(s.K, ((ue - 1) % blocks + 1) * lanes);
      claimed_run =
          claim_for_write(y + first * OH * OW, static_cast<int64_t>(sizeof(float)) * (last - first) * OH * OW);
    }
    for (int64_t u = ub; u < ue; ++u) {
      const int64_t n = u / blocks, c0 = (u % blocks) * lanes;
      const int nc = static_cast<int>(std::min(lanes, s.K - c0));
      const int64_t first = n * s.K + c0;
      // Where the block starts: element offsets of its first channel at the band's first pixel.
      const int64_t xo = s.x_blocked ? n * s.C * s.H * s.W + c0 * s.H * s.W + bd.x_offset * kConvBlock
                                     : depthwise_input_plane(s, first) * s.H * s.W + bd.x_offset;
      const int64_t yo = s.y_blocked ? first * OH * OW + bd.out_offset * kConvBlock : first * OH * OW + bd.out_offset;
      TileEpilogue te = depthwise_epilogue(epi, c0, TileEpilogue::Bias::PerRow, yo, out_plane);
      if (depthwise_has_pair_copy(s))
        te.pair_weights = detail::depthwise_pair_weights(s, w, c0);
      // The band's rows of each 8-channel block (a unit of 16 lanes is two blocks), claimed when
      // they are long enough, else fetched for writing as the kernel goes.
      bool claimed = claimed_run;
      if (claim && !claimed_run)
        for (int64_t c = 0; c < nc; c += kConvBlock)
          claimed = claim_for_write(y + yo + c / kConvBlock * out_plane,
                                    static_cast<int64_t>(sizeof(float)) * kConvBlock * bd.g.OH * OW);
      te.fetch_for_write = fetch_out && !claimed;
      double* const part_sums = epi.channel_means ? &sums[bd.index * s.N * s.K + first] : nullptr;
      // The kernel sums a blocked output as it writes it; an NCHW one is summed after it.
      if (s.y_blocked) te.sums = part_sums;
      t.depthwise_block(bd.g, x + xo, x_plane, nc, w + c0 * RS, scratch, &padding_zeroed, y + yo, out_plane, te,
                        s.x_blocked, s.y_blocked);
      if (part_sums && !s.y_blocked)  // in double, sum_row's order (global_average_pool's)
        for (int c = 0; c < nc; ++c) part_sums[c] += t.sum_row(y + yo + c * out_plane, bd.g.OH * OW);
    }
  });
  if (epi.channel_means) {
    const double count = static_cast<double>(OH * OW);
    for (int64_t i = 0; i < s.N * s.K; ++i) {
      double total = 0;
      for (int64_t band = 0; band < split.bands; ++band) total += sums[band * s.N * s.K + i];
      epi.channel_means[i] = static_cast<float>(total / count);
    }
  }
}

void conv_depthwise(const KernelTable& t, const Conv2dShape& s, const float* x, const float* w, float* y,
                    const Epilogue& epi, float* workspace, int threads) {
  KILN_CHECK(depthwise_blocked(t) || !(s.x_blocked || s.y_blocked),
             "channel-blocked activations need the blocked depthwise kernel (tables of 8 or more lanes)");
  if (s.x_block == kConvBlockWide) {
    detail::depthwise_wide(t, s, x, w, y, epi, threads);
    return;
  }
  if (depthwise_blocked(t)) {
    depthwise_blocks(t, s, x, w, y, epi, threads);
    return;
  }
  if (depthwise_by_plane(s)) {
    depthwise_planes(t, s, x, w, y, epi, threads);
    return;
  }
  const int64_t OH = s.out_h(), OW = s.out_w(), planes = s.N * s.K, RS = s.R * s.S;
  const detail::PhaseGeometry geo = detail::phase_geometry(s);
  const size_t slot_floats = depthwise_slot_floats(s);
  threads = threads_for_work(static_cast<double>(planes) * geo.grid * RS, threads);
  const bool epi_needed = !detail::epilogue_is_identity(epi);
  auto run_planes = [&](int64_t b, int64_t e, int64_t slot) {
    thread_local std::vector<float> own;
    thread_local std::vector<const float*> taps;
    float* phases;
    if (workspace) {
      phases = workspace + slot * slot_floats;
    } else {
      if (own.size() < slot_floats) own.resize(slot_floats);
      phases = own.data();
    }
    float* grid = phases + geo.per_channel;
    taps.resize(RS);
    // Channel 0 of a 1-channel phase layout: tap t = (r, c) is row q = t.
    for (int64_t q = 0; q < RS; ++q) taps[q] = detail::phase_row(s, geo, phases, 1, q);
    // Padding sits at the same places for every channel: zero the planes once, refill interiors.
    std::fill(phases, phases + geo.per_channel, 0.f);
    for (int64_t pl = b; pl < e; ++pl) {
      const int64_t c = pl % s.K;
      detail::build_phase_planes(t, s, geo, x + depthwise_input_plane(s, pl) * s.H * s.W, 1, phases,
                                 /*borders_filled=*/true);
      float* out = y + pl * OH * OW;
      // Without a dropped column the grid is the output plane itself.
      t.depthwise_grid(taps.data(), w + c * RS, RS, geo.grid, geo.compact ? grid : out);
      const TileEpilogue te = depthwise_epilogue(epi, c, TileEpilogue::Bias::Scalar, pl * OH * OW, OW);
      if (geo.compact)
        t.epilogue_copy(grid, geo.Wg, out, OW, OH, OW, te);
      else if (epi_needed)
        t.epilogue_tile(out, OW, OH, OW, te);
    }
  };
  // One contiguous range of planes per part; part i uses workspace slot i.
  const int64_t parts = std::min<int64_t>(threads, planes);
  parallel_for(parts, static_cast<int>(parts), [&](int64_t pb, int64_t pe) {
    for (int64_t part = pb; part < pe; ++part) run_planes(planes * part / parts, planes * (part + 1) / parts, part);
  });
}

}  // namespace

const char* conv_tactic_name(ConvTactic t) {
  switch (t) {
    case ConvTactic::Gemm: return "gemm";
    case ConvTactic::Pointwise: return "pointwise";
    case ConvTactic::Depthwise: return "depthwise";
    case ConvTactic::PixelGemm: return "pixel-gemm";
    case ConvTactic::Direct: return "direct";
  }
  return "?";
}

std::string conv_tactic_unsupported(ConvTactic t, const Conv2dShape& s) {
  // Depthwise: C == K (blocked in and out), or one input channel into K (blocked out only: every
  // lane reads the one plane), K a multiple of 8.
  const bool depthwise_blocks = t == ConvTactic::Depthwise && depthwise_blocked(kernel_table()) && s.group == s.C &&
                                s.K % kConvBlock == 0 && (s.K == s.C || (s.C == 1 && !s.x_blocked));
  if ((s.x_blocked || s.y_blocked) && t != ConvTactic::Direct && !depthwise_blocks)
    return "channel-blocked activations run only on the direct tactic and (on tables of 8 or more lanes, C == K a "
           "multiple of 8) the depthwise one";
  if ((s.x_padded || s.y_padded()) && t != ConvTactic::Direct) return "padded planes run only on the direct tactic";
  if (s.y_plane_rows && t != ConvTactic::Direct) return "a band of a taller output runs only on the direct tactic";
  if ((s.x_block != kConvBlock || s.y_block != kConvBlock) && t != ConvTactic::Direct) {
    if (t != ConvTactic::Depthwise) return "16-channel blocks run only on the direct and depthwise tactics";
    if (std::string why = detail::depthwise_wide_unsupported(kernel_table(), s); !why.empty()) return why;
  }
  std::string bad = shape_problem(s);
  if (!bad.empty()) return bad;
  switch (t) {
    case ConvTactic::Gemm: return "";
    case ConvTactic::Pointwise:
      if (s.R != 1 || s.S != 1) return "kernel is not 1x1";
      if (s.stride_h != 1 || s.stride_w != 1) return "stride is not 1";
      if (s.padded()) return "padded";
      if (s.group != 1) return "grouped";
      return "";
    case ConvTactic::Depthwise:
      if (s.group != s.C || (s.K != s.C && s.C != 1))
        return "not depthwise (needs group == C == K, or one input channel)";
      return "";
    case ConvTactic::PixelGemm:
      if (s.group != 1) return "grouped";
      return "";
    case ConvTactic::Direct: return detail::direct_unsupported(s);
  }
  return "unknown tactic";
}

// Output images larger than this (pixels) keep the gemm/pointwise tactics (see below).
constexpr int64_t kPixelGemmMaxPixels = 256;

// Input channels below which the direct tactic's K segments (one per tap) get too short, on
// AVX2 (measured on Zen 3). AVX-512's 14 x 32 tile takes the 3-channel stems anyway, where the
// gemm tactic's K rows (M = the output channels) leave the pixels on short phase-grid rows and
// an output copy to pay: conv_bench on Zen 5, median us at 1 / 2 threads, gemm -> direct:
// resnet's 7x7/2 3->64 1354 / 903 -> 1371 / 691, mobilenet's 3x3/2 3->32 221 / 150 -> 210 /
// 148, digits_cnn's 1->16 on 360 8x8 images 329 / 281 -> 306 / 156.
constexpr int64_t kDirectMinChannels = 8;
bool direct_takes_channels(const Conv2dShape& s) {
  return s.C >= kDirectMinChannels || kernel_table().isa == Isa::Avx512;
}
// Padded input bytes from which strided windows with far larger weights leave direct (the L2
// of the Zen 3 host it was measured on).
constexpr double kDirectMaxStridedInput = 512 << 10;

ConvTactic conv_preferred_tactic(const Conv2dShape& s) {
  // One input channel into K outputs (digits_cnn's first layer) has the depthwise form, but the
  // depthwise kernels are made for small windows: Silero VAD's STFT (1 -> 258, a 256-tap window,
  // stride 128) took 0.062 ms there and 0.035 in the reference im2col + GEMM. A wide one is a GEMM.
  const bool wide_single_channel = s.C == 1 && s.K > 1 && s.R * s.S > 49;
  if (conv_tactic_unsupported(ConvTactic::Depthwise, s).empty() && !wide_single_channel) return ConvTactic::Depthwise;
  const ConvTactic base =
      conv_tactic_unsupported(ConvTactic::Pointwise, s).empty() ? ConvTactic::Pointwise : ConvTactic::Gemm;
  // Direct: windows and strided 1x1 convolutions whose output rows fill the micro-kernel's mr
  // pixel rows (resnet50's 3x3 layers on 56x56..14x14: 79-87% -> 90-94% of peak, best of
  // conv_bench). A 1x1 stride-1 layer has no im2col to save and pays the tile transposes.
  const int mr = kernel_table().conv_shape.mr;
  const bool rows_fill = s.out_w() > mr / 2 || (s.out_w() * 2 == mr && s.out_h() >= 2);  // pairs of rows
  // Strided 1x1 layers (resnet's downsample branches) read one new input line per K step with
  // no reuse across taps: direct wins with AVX-512's 14-pixel tiles, but on AVX2's 6-pixel
  // tiles (Zen 3) gemm/pixel-gemm run them at 65-75 instead of 46-55 GFLOP/s (resnet50 and
  // resnet18 4-5% faster end to end).
  const bool strided_1x1 = s.R == 1 && s.S == 1 && kernel_table().isa != Isa::Avx512;
  // Strided windows whose padded input outgrows L2 beside weights many times larger: direct
  // reads the whole input again for every nr output channels, from L3. resnet50's layer4.0
  // 3x3/2 (512 channels, 14x14 -> 7x7: 0.5 MiB of input, 9 MiB of weights) ran at 68 GFLOP/s
  // direct and 77 pixel-gemm on Zen 3; its 28x28 layer3.0 was even (79/80) and the smaller
  // inputs prefer direct (128 -> 256 at 28x28: 81 vs 79).
  const double input_bytes = 4.0 * s.C * (s.H + s.pad_top + s.pad_bottom) * (s.W + s.pad_left + s.pad_right);
  const double weight_bytes = 4.0 * s.K * s.C * s.R * s.S;
  const bool streams_input = s.stride_h > 1 && input_bytes >= kDirectMaxStridedInput &&
                             weight_bytes >= 4 * input_bytes && kernel_table().isa != Isa::Avx512;
  if (base == ConvTactic::Gemm && conv_tactic_unsupported(ConvTactic::Direct, s).empty() && rows_fill &&
      direct_takes_channels(s) && !strided_1x1 && !streams_input)
    return ConvTactic::Direct;
  // One output row however short (a 1-D convolution run as 2-D: lower/conv1d.cpp): pixel-gemm
  // and gemm pack the very pixels a direct tile reads in place, and transpose after. Direct ran
  // 1.2-2.8x faster on 1-D layers of 64-1024 channels and 1-16 outputs (Silero VAD's encoder:
  // 129 -> 128 on 4 outputs 9.7 -> 5.7 us; ad hoc conv2d loop, Zen 4).
  if (base == ConvTactic::Gemm && s.out_h() == 1 && conv_tactic_unsupported(ConvTactic::Direct, s).empty() &&
      direct_takes_channels(s))
    return ConvTactic::Direct;
  if (!conv_tactic_unsupported(ConvTactic::PixelGemm, s).empty()) return base;
  // Lanes computed per useful output: the gemm tactics put output channels on the mr rows and
  // pixels (on the phase grid for gemm) on the nr columns; pixel-gemm the other way round.
  // Pixel-gemm also packs its pixels per block and transposes the result: on resnet50's layers
  // it wins from 10% fewer lanes on images of up to 14x14 and loses on 28x28 and larger.
  const GemmBlocking& g = kernel_table().gemm;
  const int64_t OHW = s.out_h() * s.out_w();
  if (OHW > kPixelGemmMaxPixels) return base;
  const int64_t cols = base == ConvTactic::Pointwise ? OHW : detail::phase_geometry(s).grid;
  const double gemm_lanes = static_cast<double>(round_up(s.K, g.mr) * round_up(cols, g.nr));
  const double pixel_lanes = static_cast<double>(round_up(OHW, g.mr) * round_up(s.K, g.nr));
  // Over pointwise (1x1 planes read in place, the epilogue on the accumulators) pixel-gemm needs
  // a wider margin: at 14x14 (lanes 1.07-1.10x pixel-gemm's) pointwise ran 10-20% faster on Zen
  // 3 (480->80 80 vs 70 GFLOP/s, 384->64 79 vs 65), at 7x7 (1.18-1.2x) pixel-gemm still wins
  // (960->160 203 vs 250 us). AVX-512's former 14 x 32 GEMM tile put 7x7 at 1.148x (64 columns,
  // 56 rows): pixel-gemm ran resnet50's 512->2048 at 190-194 GFLOP/s against pointwise's 158
  // (conv_bench best, Zen 5), mobilenet_v2's 160->960 at 165 against 152-153, so the margin sits
  // below that. Its 6 x 64 tile (artifact format 8) counts 7x7 even (64 columns, 54 rows), and
  // those 1x1 layers mostly run the direct tactic below or on channel-blocked activations.
  const double margin = base == ConvTactic::Pointwise ? 1.12 : 1.08;
  if (gemm_lanes <= margin * pixel_lanes) return base;
  // Those 1x1 layers run faster still on the direct tactic with AVX-512's 14-pixel tiles, at
  // 14x14 and on 7x7 maps that narrow the channels: its micro-kernel reads the pixels straight
  // from the input planes where pixel-gemm packs them per block (conv_bench, Zen 5, one thread:
  // resnet50's 1024->256 at 14x14 559 -> 512 us, 256->1024 569 -> 537, 2048->512 at 7x7
  // 536 -> 518; mobilenet_v2's 384->64 at 14x14 61 -> 47, 576->96 125 -> 108; efficientnet_b0's
  // 1152->192 at 7x7 125 -> 109; two threads 5-35% faster). 7x7 maps that widen the channels
  // ran even or slower direct (mobilenet_v2's 160->960 84 -> 85 us; its 320->1280 0.244 ->
  // 0.282 ms in the model). Not measured on AVX2, which keeps pixel-gemm.
  if (base == ConvTactic::Pointwise && kernel_table().isa == Isa::Avx512 && (OHW >= 100 || s.C >= s.K) &&
      conv_tactic_unsupported(ConvTactic::Direct, s).empty() && rows_fill && direct_takes_channels(s))
    return ConvTactic::Direct;
  return ConvTactic::PixelGemm;
}

size_t conv_packed_weight_floats_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s) {
  if (tactic == ConvTactic::Depthwise)  // [K][RS], then the pair copy: 8 weights twice per block and tap
    return static_cast<size_t>(depthwise_pair_copy_at(s) * (depthwise_has_pair_copy(s) ? 3 : 1));
  if (tactic == ConvTactic::PixelGemm) return detail::pixel_packed_weight_floats(t, s);
  if (tactic == ConvTactic::Direct) return detail::direct_packed_weight_floats(t, s);
  return s.group * packed_a_floats_on(t, s.K / s.group, s.C / s.group * s.R * s.S);
}

void conv_pack_weight_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, const float* w,
                         float* packed) {
  std::string bad = conv_tactic_unsupported(tactic, s);
  KILN_CHECK(bad.empty(), "conv tactic ", conv_tactic_name(tactic), ": ", bad);
  if (tactic == ConvTactic::Depthwise) {
    const int64_t RS = s.R * s.S;
    std::copy(w, w + s.K * RS, packed);
    // The pair kernels' weights (depthwise_pair_copy_at). Arranged per call they took 4-12% of a
    // 14x14 or 28x28 layer's time (conv_bench, one thread), and as long as the FMAs on a 7x7 plane.
    if (depthwise_has_pair_copy(s)) {
      float* pairs = packed + depthwise_pair_copy_at(s);
      for (int64_t blk = 0; blk < s.K / kConvBlock; ++blk)
        for (int64_t t = 0; t < RS; ++t)
          for (int64_t c = 0; c < 2 * kConvBlock; ++c)
            pairs[(blk * RS + t) * 2 * kConvBlock + c] = w[(blk * kConvBlock + c % kConvBlock) * RS + t];
    }
    return;
  }
  if (tactic == ConvTactic::PixelGemm) {
    detail::pixel_pack_weight(t, s, w, packed);
    return;
  }
  if (tactic == ConvTactic::Direct) {
    detail::direct_pack_weight(t, s, w, packed);
    return;
  }
  const int64_t Cg = s.C / s.group, Kg = s.K / s.group, RS = s.R * s.S, KK = Cg * RS;
  const size_t per = packed_a_floats_on(t, Kg, KK);
  if (tactic == ConvTactic::Pointwise) {
    pack_a_on(t, w, KK, s.K, KK, packed);
    return;
  }
  // The implicit GEMM's K order is (tap, channel): see conv_phase.h.
  std::vector<float> reordered(Kg * KK);
  for (int64_t g = 0; g < s.group; ++g) {
    const float* wg = w + g * Kg * KK;
    for (int64_t k = 0; k < Kg; ++k)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t tap = 0; tap < RS; ++tap) reordered[k * KK + tap * Cg + c] = wg[(k * Cg + c) * RS + tap];
    pack_a_on(t, reordered.data(), KK, Kg, KK, packed + g * per);
  }
}

namespace {

// A batch of small images (digits_cnn: 360 of 8x8): the tactics cut one image at a time, and
// one small image is too little for a parallel region (or splits into slivers), so the batch
// ran on one thread, image by image, or paid a fork-join per image. Then the threads take
// contiguous shares of the images instead, each running its images on one thread: when an
// image is under kBatchSplitImageWork multiply-adds, the batch as a whole is worth a parallel
// region, and the shares are even enough (a multiple of the threads, or at least 4 images
// each). Depthwise cuts (image, channel) planes itself. Returns the threads to split over (1: no split).
constexpr double kBatchSplitImageWork = 16 * kMinParallelWork;
int batch_split_threads(ConvTactic tactic, const Conv2dShape& s, int threads) {
  if (tactic == ConvTactic::Depthwise || s.N < 2 || threads < 2) return 1;
  const double per_image =
      static_cast<double>(s.K) * s.out_h() * s.out_w() * static_cast<double>(s.C / s.group) * s.R * s.S;
  const bool even = s.N % threads == 0 || s.N >= 4 * threads;
  if (per_image >= kBatchSplitImageWork || !even) return 1;
  return threads_for_work(per_image * static_cast<double>(s.N), threads);
}

// The images of share `part` of `parts`: [first, first + count).
Conv2dShape batch_share(const Conv2dShape& s, int part, int parts, int64_t& first) {
  first = s.N * part / parts;
  Conv2dShape share = s;
  share.N = s.N * (part + 1) / parts - first;
  return share;
}

size_t tactic_workspace_floats(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, int threads) {
  // Depthwise parts on blocks or planes run on their threads' own scratch (for_depthwise_parts).
  if (tactic == ConvTactic::Depthwise)
    return depthwise_blocked(t) || depthwise_by_plane(s) ? 0 : static_cast<size_t>(threads) * depthwise_slot_floats(s);
  if (tactic == ConvTactic::PixelGemm) return detail::pixel_workspace_floats(t, s);
  if (tactic == ConvTactic::Direct) return detail::direct_workspace_floats(t, s, threads);
  return gemm_workspace(tactic, s).total();
}

// One share's one-thread workspace under a batch split over `split` threads: that of the last
// share, which has the most images (ceil(N / split)).
size_t batch_slot_floats(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, int split) {
  int64_t first = 0;
  return tactic_workspace_floats(t, tactic, batch_share(s, split - 1, split, first), 1);
}

}  // namespace

size_t conv_workspace_floats_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, int threads) {
  if (threads <= 0) threads = default_threads();
  size_t floats = tactic_workspace_floats(t, tactic, s, threads);
  // A batch split at this or any smaller thread count: one one-thread slot per share.
  for (int split = 2; split <= threads; ++split)
    if (batch_split_threads(tactic, s, split) == split)
      floats = std::max(floats, static_cast<size_t>(split) * batch_slot_floats(t, tactic, s, split));
  return floats;
}

void conv2d_on(const KernelTable& t, ConvTactic tactic, const Conv2dShape& s, const float* x, const float* packed_w,
               float* y, const Epilogue& epi, float* workspace, int threads) {
  std::string bad = conv_tactic_unsupported(tactic, s);
  KILN_CHECK(bad.empty(), "conv tactic ", conv_tactic_name(tactic), ": ", bad);
  if (threads <= 0) threads = default_threads();
  if (const int split = batch_split_threads(tactic, s, threads); split > 1) {
    const size_t slot = workspace ? batch_slot_floats(t, tactic, s, split) : 0;
    parallel_for(split, split, [&](int64_t pb, int64_t pe) {
      for (int64_t part = pb; part < pe; ++part) {
        int64_t first = 0;
        const Conv2dShape share = batch_share(s, static_cast<int>(part), split, first);
        if (share.N == 0) continue;
        Epilogue e = epi;
        if (e.residual) e.residual += first * s.K * s.out_h() * s.out_w();
        if (e.channel_means) e.channel_means += first * s.K;
        conv2d_on(t, tactic, share, x + first * s.x_image_floats(), packed_w, y + first * s.y_image_floats(), e,
                  workspace ? workspace + static_cast<size_t>(part) * slot : nullptr, 1);
      }
    });
    return;
  }
  if (tactic == ConvTactic::Depthwise)
    conv_depthwise(t, s, x, packed_w, y, epi, workspace, threads);
  else if (tactic == ConvTactic::PixelGemm)
    detail::conv_pixel_gemm(t, s, x, packed_w, y, epi, workspace, threads);
  else if (tactic == ConvTactic::Direct)
    detail::conv_direct(t, s, x, packed_w, y, epi, workspace, threads);
  else
    conv_gemm(t, tactic, s, x, packed_w, y, epi, workspace, threads);
  // The blocked depthwise kernel summed its output as it went (depthwise_blocks).
  if (epi.channel_means && !(tactic == ConvTactic::Depthwise && depthwise_blocked(t)))
    channel_means_after(t, s, y, epi.channel_means, threads);
}

size_t conv_packed_weight_floats(ConvTactic t, const Conv2dShape& s) {
  return conv_packed_weight_floats_on(kernel_table(), t, s);
}
void conv_pack_weight(ConvTactic t, const Conv2dShape& s, const float* w, float* packed) {
  conv_pack_weight_on(kernel_table(), t, s, w, packed);
}
size_t conv_workspace_floats(ConvTactic t, const Conv2dShape& s, int threads) {
  return conv_workspace_floats_on(kernel_table(), t, s, threads);
}
void conv2d(ConvTactic t, const Conv2dShape& s, const float* x, const float* packed_w, float* y, const Epilogue& epi,
            float* workspace, int threads) {
  conv2d_on(kernel_table(), t, s, x, packed_w, y, epi, workspace, threads);
}

}  // namespace kiln::kernels
