// INT8 convolution as an implicit GEMM: output [K/group, OH*OW] = weights (rows operand, s8,
// packed once) x im2col(activations) (cols operand, u8). The im2col is written straight into the
// packed cols panels, four kernel taps (one 4-k group) at a time, from one row of values per tap:
//   1x1, stride 1, unpadded, u8: the input planes themselves;
//   every other convolution: the input is copied once into zero-point-padded *phase planes* —
//     plane (c, ph, pw)[i][j] = the padded input at row i * stride_h + ph, column
//     j * stride_w + pw, of Hq x Wq = ceil(Hp / stride_h) x ceil(Wp / stride_w) — and the GEMM runs
//     over the phase-plane grid (column j = oh * Wq + ow, (OH - 1) * Wq + OW columns; those with
//     j % Wq >= OW are dropped by the epilogue). Tap (kh, kw) is phase ((kh dil_h) % stride_h,
//     (kw dil_w) % stride_w) at offset ((kh dil_h) / stride_h) * Wq + (kw dil_w) / stride_w: a
//     contiguous row for any stride, so nothing is gathered. Only the phases a tap reads are filled.
#include <algorithm>
#include <cstring>
#include <vector>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"
#include "qconv_internal.h"

namespace kiln::kernels::int8 {
using detail::ceil_div;
using detail::round_up;
namespace {

struct Geometry {
  int64_t P, Cg, Mg, Kc, kgroups;
  bool direct;        // the input planes are read as they are
  int64_t Hq, Wq, N;  // phase plane; GEMM columns (P, or (OH-1)*Wq + OW on the phase grid)
  Geometry(const Conv2dShape& s, uint8_t flip)
      : P(s.out_h() * s.out_w()), Cg(s.C / s.group), Mg(s.K / s.group), Kc(Cg * s.R * s.S), kgroups(ceil_div(Kc, 4)) {
    direct = s.stride_h == 1 && s.stride_w == 1 && s.R == 1 && s.S == 1 && !s.padded() && flip == 0;
    Hq = direct ? s.H : ceil_div(s.H + s.pad_top + s.pad_bottom, s.stride_h);
    Wq = direct ? s.W : ceil_div(s.W + s.pad_left + s.pad_right, s.stride_w);
    N = direct ? P : (s.out_h() - 1) * Wq + s.out_w();
  }
  int64_t phase_bytes(const Conv2dShape& s) const { return direct ? 0 : Cg * s.stride_h * s.stride_w * Hq * Wq; }
  // Where tap (c, kh, kw)'s row starts in the phase planes.
  int64_t tap_offset(const Conv2dShape& s, int64_t c, int64_t kh, int64_t kw) const {
    const int64_t dh = kh * s.dil_h, dw = kw * s.dil_w;
    const int64_t plane = (c * s.stride_h + dh % s.stride_h) * s.stride_w + dw % s.stride_w;
    return plane * Hq * Wq + dh / s.stride_h * Wq + dw / s.stride_w;
  }
};

// dst[j] = src[j * stride] ^ flip for j < n; stride 1 and 2 16 bytes at a time (the build's -O2
// leaves byte loops scalar).
void copy_flipped(const uint8_t* src, int64_t stride, uint8_t flip, int64_t n, uint8_t* dst) {
  int64_t j = 0;
#if defined(__SSE2__)
  const __m128i f = _mm_set1_epi8(static_cast<char>(flip)), even = _mm_set1_epi16(0x00FF);
  if (stride == 1) {
    for (; j + 16 <= n; j += 16)
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j),
                       _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + j)), f));
  } else if (stride == 2) {
    // 32 source bytes -> their 16 even bytes (the low byte of each 16-bit lane, packed); the last
    // byte read, src[2j + 31], must not pass src[2(n - 1)]: j + 16 < n.
    for (; j + 16 < n; j += 16) {
      const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j)), even);
      const __m128i b = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * j + 16)), even);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + j), _mm_xor_si128(_mm_packus_epi16(a, b), f));
    }
    // The last 16 outputs (overlapping the ones above) from the 32 bytes that end at the last
    // byte read, src[2(n - 1)]: its wanted bytes are the odd ones of that window. Rows here are
    // short (resnet's phase rows are 15-57 bytes), so this replaces most of a scalar tail.
    if (j < n && n >= 17) {
      const uint8_t* w = src + 2 * n - 33;
      const __m128i a = _mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w)), 8);
      const __m128i b = _mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w + 16)), 8);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + n - 16), _mm_xor_si128(_mm_packus_epi16(a, b), f));
      return;
    }
    // 9-16 outputs (a 1x1 stride-2 convolution's phase rows on 14x14 maps; byte by byte, those
    // rows took 8.5 % of resnet50's 512 -> 1024 downsampling, perf): outputs 0-7 from the even
    // bytes of the 16 at src, outputs n-8 .. n-1 from the odd bytes of the 16 that end at the
    // last byte read, src[2(n - 1)]; the two 8-byte stores overlap when n < 16.
    if (n >= 9 && n <= 16) {
      const __m128i a = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src)), even);
      const __m128i b = _mm_srli_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + 2 * n - 17)), 8);
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst), _mm_xor_si128(_mm_packus_epi16(a, a), f));
      _mm_storel_epi64(reinterpret_cast<__m128i*>(dst + n - 8), _mm_xor_si128(_mm_packus_epi16(b, b), f));
      return;
    }
  }
#endif
  for (; j < n; ++j) dst[j] = static_cast<uint8_t>(src[j * stride] ^ flip);
}

// Phase rows narrower than this go through gather_phase_planes: a row of a few bytes costs a
// fill_phase_row call and a scalar loop (a 1x1 stride-2 convolution on a 14x14 map, 1024 -> 2048
// channels: 7168 rows of 7 bytes took 18 % of its time; qconv_bench, 1 / 2 threads, 486-522 /
// 372-379 us before, 448-462 / 298-332 after). From 9 bytes copy_flipped's vector paths are
// faster than the gather (kiln profile, 512 -> 1024 stride 2 at 28x28: 0.39 -> 0.42 ms with
// its 14-byte rows gathered).
constexpr int64_t kGatherBelowWidth = 9;

// The phase planes through one index table per phase: entry i * Wq + j is the input position
// phase row i, column j reads, or -1 in the padding. The table lives in the calling thread's
// vector (no allocation once warm), which the pool's threads read through a reference.
void gather_phase_planes(const Conv2dShape& s, const Geometry& g, const uint8_t* x, uint8_t flip, uint8_t pad,
                         const std::vector<char>& used_h, const std::vector<char>& used_w, uint8_t* dst, int threads) {
  const int64_t phases = s.stride_h * s.stride_w, plane = g.Hq * g.Wq;
  thread_local std::vector<int32_t> tables;
  std::vector<int32_t>& index = tables;
  index.resize(static_cast<size_t>(phases * plane));
  for (int64_t ph = 0; ph < s.stride_h; ++ph)
    for (int64_t pw = 0; pw < s.stride_w; ++pw) {
      int32_t* t = index.data() + (ph * s.stride_w + pw) * plane;
      for (int64_t i = 0; i < g.Hq; ++i)
        for (int64_t j = 0; j < g.Wq; ++j) {
          const int64_t ih = i * s.stride_h + ph - s.pad_top, iw = j * s.stride_w + pw - s.pad_left;
          t[i * g.Wq + j] = ih < 0 || ih >= s.H || iw < 0 || iw >= s.W ? -1 : static_cast<int32_t>(ih * s.W + iw);
        }
    }
  parallel_for(g.Cg * phases, threads_for_work(static_cast<double>(g.Cg) * plane * phases, threads), [&](int64_t b,
                                                                                                          int64_t e) {
    for (int64_t cp = b; cp < e; ++cp) {
      const int64_t c = cp / phases, ph = cp % phases / s.stride_w, pw = cp % s.stride_w;
      if (!used_h[static_cast<size_t>(ph)] || !used_w[static_cast<size_t>(pw)]) continue;
      const int32_t* t = index.data() + cp % phases * plane;
      const uint8_t* xc = x + c * s.H * s.W;
      uint8_t* d = dst + cp * plane;
      for (int64_t q = 0; q < plane; ++q) d[q] = t[q] < 0 ? pad : static_cast<uint8_t>(xc[t[q]] ^ flip);
    }
  });
}

// The group's phase planes that some tap reads: `pad` outside the input, x XOR flip inside.
void fill_phase_planes(const Conv2dShape& s, const Geometry& g, const uint8_t* x, uint8_t flip, uint8_t pad,
                       uint8_t* dst, int threads) {
  const std::vector<char> used_h = detail::used_phases(s.stride_h, s.R, s.dil_h);
  const std::vector<char> used_w = detail::used_phases(s.stride_w, s.S, s.dil_w);
  const int64_t phases = s.stride_h * s.stride_w, plane = g.Hq * g.Wq;
  if (g.Wq < kGatherBelowWidth) return gather_phase_planes(s, g, x, flip, pad, used_h, used_w, dst, threads);
  parallel_for(g.Cg * phases, threads_for_work(static_cast<double>(g.Cg) * plane * phases, threads), [&](int64_t b,
                                                                                                          int64_t e) {
    for (int64_t cp = b; cp < e; ++cp) {
      const int64_t c = cp / phases, ph = cp % phases / s.stride_w, pw = cp % s.stride_w;
      if (!used_h[static_cast<size_t>(ph)] || !used_w[static_cast<size_t>(pw)]) continue;
      uint8_t* d = dst + cp * plane;
      const detail::PhaseColumns pc(s, g.Wq, pw);
      for (int64_t i = 0; i < g.Hq; ++i, d += g.Wq) {
        const int64_t ih = i * s.stride_h + ph - s.pad_top;
        detail::fill_phase_row(ih < 0 || ih >= s.H ? nullptr : x + (c * s.H + ih) * s.W, pc, s.stride_w, flip, pad,
                               g.Wq, d);
      }
    }
  });
}

}  // namespace

namespace detail {

void fill_phase_row(const uint8_t* row, const PhaseColumns& pc, int64_t stride_w, uint8_t flip, uint8_t pad,
                    int64_t Wq, uint8_t* dst) {
  if (!row) {
    std::memset(dst, pad, static_cast<size_t>(Wq));
    return;
  }
  for (int64_t j = 0; j < pc.j_lo; ++j) dst[j] = pad;
  copy_flipped(row + pc.j_lo * stride_w + pc.first, stride_w, flip, pc.j_hi - pc.j_lo, dst + pc.j_lo);
  for (int64_t j = pc.j_hi; j < Wq; ++j) dst[j] = pad;
}

GroupOutput group_output(const QEpilogue& e, const Conv2dShape& s, int64_t n, int64_t gi, int64_t grid_w, void* y) {
  const int64_t Mg = s.K / s.group, P = s.out_h() * s.out_w(), ch0 = gi * Mg;
  const size_t osize = e.out == QType::F32 ? 4 : 1, rsize = e.residual_type == QType::F32 ? 4 : 1;
  GroupOutput g{e, nullptr};
  g.e.per_row = true;
  g.e.scale = e.scale + ch0;
  if (e.bias) g.e.bias = e.bias + ch0;
  if (e.bias_f) g.e.bias_f = e.bias_f + ch0;
  // The phase grid is wider than the output when padding or the kernel's width adds columns;
  // when it is not (e.g. 1x1 stride 2 on an even width) its columns are the output's.
  if (grid_w != 0 && grid_w != s.out_w()) g.e.grid_w = grid_w, g.e.grid_valid = s.out_w();
  const int64_t first = (n * s.K + ch0) * P;  // output element (n, ch0, 0, 0)
  if (e.residual) {
    g.e.residual = static_cast<const char*>(e.residual) + first * rsize;
    g.e.ldr = P;
  }
  g.y = static_cast<char*>(y) + first * osize;
  return g;
}

}  // namespace detail

namespace detail {
int64_t qconv_packed_columns(const Conv2dShape& s) { return Geometry(s, 0).N; }
}  // namespace detail

namespace {
// Pixel-major activations on a table that cannot run them natively (an artifact compiled where
// it could: lower/int8_nhwc_layout.cpp marks them only then) run the NCHW paths between
// transposes (qconv2d_transposed): `planar` is the shape they run, packed and sized as such.
bool native_nhwc(const QKernels& k, const Conv2dShape& s) {
  return qconv_nhwc_supported(k, s) && (s.group == 1 || (s.x_nhwc && s.y_nhwc));
}
bool transposed(const QKernels& k, const Conv2dShape& s) { return (s.x_nhwc || s.y_nhwc) && !native_nhwc(k, s); }
Conv2dShape planar(Conv2dShape s) {
  s.x_nhwc = s.y_nhwc = false;
  return s;
}

// Each of N images' [rows][cols] elements of `elem` bytes into [cols][rows], in 16 x 16 blocks.
void transpose_images(const uint8_t* src, int64_t N, int64_t rows, int64_t cols, size_t elem, uint8_t* dst,
                      int threads) {
  const int64_t rb = ceil_div(rows, 16), cb = ceil_div(cols, 16);
  parallel_for(N * rb, threads_for_work(static_cast<double>(N) * rows * cols, threads), [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t n = item / rb, r0 = item % rb * 16, r1 = std::min(rows, r0 + 16);
      const uint8_t* sn = src + n * rows * cols * elem;
      uint8_t* dn = dst + n * rows * cols * elem;
      for (int64_t c0 = 0; c0 < cb * 16; c0 += 16)
        for (int64_t r = r0; r < r1; ++r)
          for (int64_t c = c0; c < std::min(cols, c0 + 16); ++c)
            std::memcpy(dn + (c * rows + r) * elem, sn + (r * cols + c) * elem, elem);
    }
  });
}

// The transposes' buffers after the planar path's workspace: the NCHW input, output and
// residual (4 bytes an element: the widest output and residual type).
struct TransposedLayout {
  int64_t inner, x, y, r;
  TransposedLayout(int64_t inner_bytes, const Conv2dShape& s)
      : inner(round_up(inner_bytes, 64)), x(round_up(s.N * s.C * s.H * s.W, 64)),
        y(round_up(s.N * s.K * s.out_h() * s.out_w() * 4, 64)), r(y) {}
  int64_t total() const { return inner + x + y + r; }
};
}  // namespace

const char* qconv_tactic_name(const QKernels& k, const Conv2dShape& s, bool signed_input) {
  if (transposed(k, s)) return "nhwc-transposed";
  if (s.x_nhwc || s.y_nhwc) return "nhwc";
  if (qconv_is_depthwise(k, s)) return "depthwise";
  if (detail::qconv_uses_pixels(k, s)) return "pixels";
  if (detail::qconv_uses_quads(k, s)) return "quads";
  return Geometry(s, signed_input ? 0x80 : 0).direct ? "planes" : "im2col";
}

size_t qconv_packed_weight_bytes(const QKernels& k, const Conv2dShape& s) {
  if (transposed(k, s)) return qconv_packed_weight_bytes(k, planar(s));
  if (qconv_is_depthwise(k, s)) return detail::qdepthwise_packed_weight_bytes(s);
  if (detail::qconv_uses_pixels(k, s)) return detail::qconv_packed_weight_bytes_pixels(k, s);
  Geometry g(s, 0);
  return static_cast<size_t>(s.group) * packed_rows_bytes(k, g.Mg, g.Kc);
}

void qconv_pack_weight(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed) {
  if (transposed(k, s)) return qconv_pack_weight(k, planar(s), w, packed);
  if (qconv_is_depthwise(k, s)) return detail::qdepthwise_pack_weight(s, w, packed);
  if (detail::qconv_uses_pixels(k, s)) return detail::qconv_pack_weight_pixels(k, s, w, packed);
  if (detail::qconv_uses_quads(k, s)) return detail::qconv_pack_weight_quads(k, s, w, packed);
  Geometry g(s, 0);
  const size_t per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  for (int64_t gi = 0; gi < s.group; ++gi)
    pack_rows(k, reinterpret_cast<const uint8_t*>(w + gi * g.Mg * g.Kc), g.Kc, g.Mg, g.Kc, 0, packed + gi * per_group);
}

namespace {
// Packed panels a thread keeps at once: the weights stream once per chunk of panels (row tiles
// outer, the chunk's panels inner), so a chunk is as many panels as fit in about half an L2.
constexpr int64_t kChunkBytes = 256 << 10;
int64_t panel_bytes(const QKernels& k, const Geometry& g) { return g.kgroups * k.nr * 4; }
int64_t chunk_panels(const QKernels& k, const Geometry& g) {
  return std::clamp<int64_t>(kChunkBytes / panel_bytes(k, g), 1, ceil_div(g.N, k.nr));
}
// Workspace: [phase planes][tap offsets]; each thread packs a chunk of panels (per_thread_bytes)
// into its own scratch (thread_scratch).
struct Layout {
  int64_t phase_bytes, offsets_bytes, per_thread_bytes;
  Layout(const QKernels& k, const Conv2dShape& s, const Geometry& g)
      : phase_bytes(round_up(g.phase_bytes(s), 64)), offsets_bytes(round_up(g.kgroups * 4 * 8, 64)),
        per_thread_bytes(round_up(chunk_panels(k, g) * panel_bytes(k, g), 64)) {}
  int64_t total() const { return phase_bytes + offsets_bytes; }
};
}  // namespace

size_t qconv_workspace_bytes(const QKernels& k, const Conv2dShape& s, int threads) {
  if (transposed(k, s))
    return static_cast<size_t>(
        TransposedLayout(static_cast<int64_t>(qconv_workspace_bytes(k, planar(s), threads)), s).total());
  if (qconv_is_depthwise(k, s)) return detail::qdepthwise_workspace_bytes(s, threads);
  if (detail::qconv_uses_pixels(k, s)) return detail::qconv_workspace_bytes_pixels(k, s, threads);
  if (detail::qconv_uses_quads(k, s)) return detail::qconv_workspace_bytes_quads(k, s);
  size_t most = 0;
  for (uint8_t flip : {0, 0x80}) {  // the layout (and so the size) depends on the flip
    Geometry g(s, flip);
    most = std::max(most, static_cast<size_t>(Layout(k, s, g).total()));
  }
  return most;
}

namespace detail {
// The one whose largest share of tile x panel products is over 2 % smaller; within 2 %,
// `panels_on_tie`. A panel with at most half its columns valid counts half on the tables whose
// fused tiles multiply only its first vector (all with the strip). On 14x14 maps (13 panels) two
// threads got 6 and 6.5 panels; 256 -> 1024 channels there took 0.92x the time split by rows.
bool split_by_panels(const QKernels& k, int64_t N, int64_t mt, int threads, bool panels_on_tie) {
  const int64_t nt = ceil_div(N, k.nr);
  if (threads <= 1) return true;
  const bool half = k.tile_s8u8_epilogue_strip != nullptr && N - (nt - 1) * k.nr <= k.nr / 2;
  const double last = half ? 0.5 : 1.0;
  double panels = 0;  // the largest share of panels, as the drivers cut them
  for (int t = 0; t < threads; ++t) {
    const int64_t b = nt * t / threads, e = nt * (t + 1) / threads;
    panels = std::max(panels, static_cast<double>(e - b) - (e == nt && e > b ? 1.0 - last : 0.0));
  }
  const double by_panels = panels * static_cast<double>(mt);
  const double by_rows = static_cast<double>(ceil_div(mt, threads)) * (static_cast<double>(nt) - 1.0 + last);
  if (by_rows < 0.98 * by_panels) return false;
  if (by_panels < 0.98 * by_rows) return true;
  return panels_on_tie;
}
}  // namespace detail

// One pass per image and group: each thread packs a chunk of cols panels into its own buffer
// (it stays in that core's L2) and runs the weights' row tiles over it, the requantizing
// epilogue on each finished tile. Split over threads by panels or by row tiles (each thread
// then packs every panel), whichever balances better (split_by_panels).
namespace {
// Pixel-major activations on a table without the kernels for them (native_nhwc): the input and a
// residual transposed into NCHW, the planar path, its output transposed back. Slower, but an
// artifact compiled on an AVX-512 VNNI CPU runs on every CPU its ISA allows.
void qconv2d_transposed(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                        const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  const Conv2dShape p = planar(s);
  const TransposedLayout l(static_cast<int64_t>(qconv_workspace_bytes(k, p, threads)), s);
  uint8_t* xb = workspace + l.inner;
  uint8_t* yb = xb + l.x;
  uint8_t* rb = yb + l.y;
  const int64_t HW = s.H * s.W, P = s.out_h() * s.out_w();
  const size_t osize = e.out == QType::F32 ? 4 : 1, rsize = e.residual_type == QType::F32 ? 4 : 1;
  if (s.x_nhwc) transpose_images(x, s.N, HW, s.C, 1, xb, threads);
  QEpilogue ep = e;
  if (s.y_nhwc && e.residual) {
    transpose_images(static_cast<const uint8_t*>(e.residual), s.N, P, s.K, rsize, rb, threads);
    ep.residual = rb, ep.ldr = P;
  }
  qconv2d(k, p, s.x_nhwc ? xb : x, flip, pad, packed_w, ep, s.y_nhwc ? static_cast<void*>(yb) : y, workspace, threads);
  if (s.y_nhwc) transpose_images(yb, s.N, s.K, P, osize, static_cast<uint8_t*>(y), threads);
}
}  // namespace

void qconv2d(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
             const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  if (transposed(k, s)) return qconv2d_transposed(k, s, x, flip, pad, packed_w, e, y, workspace, threads);
  if (qconv_is_depthwise(k, s)) {
    if (s.x_nhwc || s.y_nhwc)  // both, on a table with the kernel (else transposed above)
      return k.depthwise_nhwc(s, x, flip, pad, reinterpret_cast<const float*>(packed_w), e, y, threads);
    return detail::qdepthwise(k, s, x, flip, pad, packed_w, e, y, workspace, threads);
  }
  if (detail::qconv_uses_pixels(k, s))
    return detail::qconv2d_pixels(k, s, x, flip, pad, packed_w, e, y, workspace, threads);
  if (detail::qconv_uses_quads(k, s)) return detail::qconv2d_quads(k, s, x, flip, pad, packed_w, e, y, workspace, threads);
  Geometry g(s, flip);
  const Layout l(k, s, g);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  uint8_t* phases = workspace;
  int64_t* offsets = reinterpret_cast<int64_t*>(workspace + l.phase_bytes);
  const size_t w_per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  // Where each tap's row starts (relative to the phase planes, or to the group's input planes);
  // -1 past Kc (a zero row).
  for (int64_t kk = 0; kk < g.kgroups * 4; ++kk) {
    const int64_t c = kk / (s.R * s.S), rem = kk % (s.R * s.S);
    offsets[kk] = kk >= g.Kc ? -1 : g.direct ? c * s.H * s.W : g.tap_offset(s, c, rem / s.S, rem % s.S);
  }
  const int64_t nt = ceil_div(g.N, k.nr), mt = ceil_div(g.Mg, k.mr), chunk = chunk_panels(k, g);
  const int64_t pbytes = panel_bytes(k, g);
  const int work_threads = threads_for_work(static_cast<double>(g.Mg) * g.N * g.Kc / 4, threads);
  // On a tie, panels: a row split would pack every panel on every thread.
  const bool by_panels = detail::split_by_panels(k, g.N, mt, work_threads, true);
  const int64_t slots = std::min<int64_t>(work_threads, by_panels ? nt : mt);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      const uint8_t* xg = x + (n * s.C + gi * g.Cg) * s.H * s.W;
      if (!g.direct) fill_phase_planes(s, g, xg, flip, pad, phases, threads);
      const uint8_t* base = g.direct ? xg : phases;
      const detail::GroupOutput go = detail::group_output(e, s, n, gi, g.direct ? 0 : g.Wq, y);
      const QEpilogue& eg = go.e;
      void* yg = go.y;
      const bool fused = k.tile_s8u8_epilogue && (eg.grid_w == 0 || k.tile_epilogue_grid);
      const uint8_t* wg = packed_w + gi * w_per_group;
      parallel_for(slots, static_cast<int>(slots), [&](int64_t sb, int64_t se) {
        alignas(64) int32_t acc[16 * 64];  // mr * nr <= 16 * 64 for every table
        uint8_t* panels = detail::thread_scratch(l.per_thread_bytes);
        for (int64_t slot = sb; slot < se; ++slot) {
          const int64_t p_begin = by_panels ? nt * slot / slots : 0, p_end = by_panels ? nt * (slot + 1) / slots : nt;
          const int64_t t_begin = by_panels ? 0 : mt * slot / slots, t_end = by_panels ? mt : mt * (slot + 1) / slots;
          for (int64_t c0 = p_begin; c0 < p_end; c0 += chunk) {
            const int64_t c1 = std::min(p_end, c0 + chunk), j0 = c0 * k.nr, ncols = std::min(g.N, c1 * k.nr) - j0;
            pack_cols_rows(k, base, offsets, g.kgroups, j0, ncols, panels);
            for (int64_t t = t_begin; t < t_end; ++t) {
              const int rows_here = static_cast<int>(std::min<int64_t>(k.mr, g.Mg - t * k.mr));
              if (fused && k.tile_s8u8_epilogue_strip) {
                k.tile_s8u8_epilogue_strip(g.kgroups, wg + t * g.kgroups * k.mr * 4, panels, pbytes, c1 - c0, rows_here,
                                           ncols, eg, t * k.mr, j0, yg, g.P);
                continue;
              }
              for (int64_t p = c0; p < c1; ++p) {
                const uint8_t* wt = wg + t * g.kgroups * k.mr * 4;
                const int cols_here = static_cast<int>(std::min<int64_t>(k.nr, g.N - p * k.nr));
                if (fused) {
                  k.tile_s8u8_epilogue(g.kgroups, wt, panels + (p - c0) * pbytes, nullptr, rows_here, cols_here, eg, t * k.mr,
                                       p * k.nr, yg, g.P);
                  continue;
                }
                k.tile_s8u8(g.kgroups, wt, panels + (p - c0) * pbytes, acc);
                epilogue_tile(k, acc, rows_here, t * k.mr, p * k.nr, cols_here, eg, yg, g.P);
              }
            }
          }
        }
      });
    }
}

}  // namespace kiln::kernels::int8
