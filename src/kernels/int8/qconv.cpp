// INT8 convolution as an implicit GEMM: output [K/group, OH*OW] = weights (rows operand, s8,
// packed once) x im2col(activations) (cols operand, u8). The im2col is written straight into the
// packed cols panels, four kernel taps (one 4-k group) at a time: each tap's row of OH*OW values
// is gathered (padding taps read the zero point) and the four rows are byte-interleaved. A 1x1,
// stride-1, unpadded convolution of u8 activations reads the input planes directly.
#include <algorithm>
#include <cstring>

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::int8 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

struct Geometry {
  int64_t P, Cg, Mg, Kc, kgroups;
  explicit Geometry(const Conv2dShape& s)
      : P(s.out_h() * s.out_w()), Cg(s.C / s.group), Mg(s.K / s.group), Kc(Cg * s.R * s.S), kgroups(ceil_div(Kc, 4)) {}
};

// dst[oh * OW + ow] = x value under tap (kh, kw) at output (oh, ow), XOR flip, or `pad` outside.
void gather_tap_row(const Conv2dShape& s, const uint8_t* plane, int64_t kh, int64_t kw, uint8_t flip, uint8_t pad,
                    uint8_t* dst) {
  const int64_t OH = s.out_h(), OW = s.out_w();
  const int64_t off = kw * s.dil_w - s.pad_left;  // iw = ow * stride_w + off
  int64_t ow_lo = off >= 0 ? 0 : ceil_div(-off, s.stride_w);
  int64_t ow_hi = s.W - 1 - off >= 0 ? std::min(OW, (s.W - 1 - off) / s.stride_w + 1) : 0;
  ow_lo = std::min(ow_lo, OW);
  ow_hi = std::max(ow_hi, ow_lo);
  for (int64_t oh = 0; oh < OH; ++oh) {
    uint8_t* d = dst + oh * OW;
    const int64_t ih = oh * s.stride_h - s.pad_top + kh * s.dil_h;
    if (ih < 0 || ih >= s.H) {
      std::memset(d, pad, static_cast<size_t>(OW));
      continue;
    }
    const uint8_t* src = plane + ih * s.W + off;
    for (int64_t ow = 0; ow < ow_lo; ++ow) d[ow] = pad;  // a pixel or two: no call
    for (int64_t ow = ow_hi; ow < OW; ++ow) d[ow] = pad;
    if (s.stride_w == 1 && flip == 0) {
      std::memcpy(d + ow_lo, src + ow_lo, static_cast<size_t>(ow_hi - ow_lo));
    } else {
      for (int64_t ow = ow_lo; ow < ow_hi; ++ow) d[ow] = static_cast<uint8_t>(src[ow * s.stride_w] ^ flip);
    }
  }
}

}  // namespace

size_t qconv_packed_weight_bytes(const QKernels& k, const Conv2dShape& s) {
  Geometry g(s);
  return static_cast<size_t>(s.group) * packed_rows_bytes(k, g.Mg, g.Kc);
}

void qconv_pack_weight(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed) {
  Geometry g(s);
  const size_t per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  for (int64_t gi = 0; gi < s.group; ++gi)
    pack_rows(k, reinterpret_cast<const uint8_t*>(w + gi * g.Mg * g.Kc), g.Kc, g.Mg, g.Kc, 0, packed + gi * per_group);
}

size_t qconv_workspace_bytes(const QKernels& k, const Conv2dShape& s, int threads) {
  Geometry g(s);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  return static_cast<size_t>(round_up(static_cast<int64_t>(packed_cols_bytes(k, g.Kc, g.P)), 64) +
                             threads * 4 * round_up(g.P, 64));
}

void qconv2d(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
             const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  Geometry g(s);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  const bool direct = s.R == 1 && s.S == 1 && s.stride_h == 1 && s.stride_w == 1 && s.pad_top == 0 &&
                      s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0 && flip == 0;
  uint8_t* cols = workspace;
  uint8_t* scratch = workspace + round_up(static_cast<int64_t>(packed_cols_bytes(k, g.Kc, g.P)), 64);
  const int64_t row_bytes = round_up(g.P, 64);
  const size_t w_per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  const size_t osize = e.out == QType::F32 ? 4 : 1, rsize = e.residual_type == QType::F32 ? 4 : 1;
  const int pack_threads = threads_for_work(static_cast<double>(g.Kc) * g.P, threads);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      const uint8_t* xg = x + (n * s.C + gi * g.Cg) * s.H * s.W;
      // Each worker packs a contiguous range of 4-k groups with its own gather rows.
      parallel_for(pack_threads, pack_threads, [&](int64_t tb, int64_t te) {
        for (int64_t t = tb; t < te; ++t) {
          uint8_t* mine = scratch + t * 4 * row_bytes;
          const int64_t g0 = g.kgroups * t / pack_threads, g1 = g.kgroups * (t + 1) / pack_threads;
          for (int64_t kg = g0; kg < g1; ++kg) {
            const uint8_t* r[4];
            for (int q = 0; q < 4; ++q) {
              const int64_t kk = kg * 4 + q;
              if (kk >= g.Kc) {
                r[q] = nullptr;
                continue;
              }
              const int64_t c = kk / (s.R * s.S), rem = kk % (s.R * s.S);
              const uint8_t* plane = xg + c * s.H * s.W;
              if (direct) {
                r[q] = plane;
              } else {
                gather_tap_row(s, plane, rem / s.S, rem % s.S, flip, pad, mine + q * row_bytes);
                r[q] = mine + q * row_bytes;
              }
            }
            pack_cols_group(k, r, g.P, kg, g.kgroups, cols);
          }
        }
      });
      QEpilogue eg = e;
      const int64_t ch0 = gi * g.Mg;
      eg.per_row = true;
      eg.scale = e.scale + ch0;
      if (e.bias) eg.bias = e.bias + ch0;
      if (e.bias_f) eg.bias_f = e.bias_f + ch0;
      const int64_t first = (n * s.K + ch0) * g.P;  // output element (n, ch0, 0, 0)
      if (e.residual) {
        eg.residual = static_cast<const char*>(e.residual) + first * rsize;
        eg.ldr = g.P;
      }
      qgemm_packed(k, true, g.Mg, g.P, g.Kc, packed_w + gi * w_per_group, cols, eg,
                   static_cast<char*>(y) + first * osize, g.P, threads);
    }
}

}  // namespace kiln::kernels::int8
