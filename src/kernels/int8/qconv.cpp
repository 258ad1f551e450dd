// INT8 convolution as an implicit GEMM: output [K/group, OH*OW] = weights (rows operand, s8,
// packed once) x im2col(activations) (cols operand, u8). The im2col is written straight into the
// packed cols panels, four kernel taps (one 4-k group) at a time, from one row of values per tap:
//   1x1, stride 1, unpadded, u8: the input planes themselves;
//   other stride-1 convolutions: the input is copied once into zero-point-padded planes and the
//     GEMM runs over the padded width (OH x Wp columns, the extra ones dropped by the epilogue),
//     so each tap's row is the padded plane at an offset: no gather;
//   strided convolutions: each tap's OH*OW values are gathered (padding taps read the zero point).
#include <algorithm>
#include <cstring>

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::int8 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

enum class Im2col { Direct, Padded, Gather };

struct Geometry {
  int64_t P, Cg, Mg, Kc, kgroups;
  Im2col how;
  int64_t Hp, Wp, N;  // padded plane (Padded); GEMM columns (P, or (OH-1)*Wp + OW on the padded grid)
  Geometry(const Conv2dShape& s, uint8_t flip)
      : P(s.out_h() * s.out_w()), Cg(s.C / s.group), Mg(s.K / s.group), Kc(Cg * s.R * s.S), kgroups(ceil_div(Kc, 4)) {
    const bool unpadded = s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0;
    const bool stride1 = s.stride_h == 1 && s.stride_w == 1;
    how = stride1 && s.R == 1 && s.S == 1 && unpadded && flip == 0 ? Im2col::Direct
          : stride1                                                 ? Im2col::Padded
                                                                    : Im2col::Gather;
    Hp = s.H + s.pad_top + s.pad_bottom, Wp = s.W + s.pad_left + s.pad_right;
    N = how == Im2col::Padded ? (s.out_h() - 1) * Wp + s.out_w() : P;
  }
  int64_t padded_bytes() const { return how == Im2col::Padded ? Cg * Hp * Wp : 0; }
};

// dst = the group's Cg planes, padded with `pad` and XORed with flip.
void pad_planes(const Conv2dShape& s, const Geometry& g, const uint8_t* x, uint8_t flip, uint8_t pad, uint8_t* dst,
                int threads) {
  parallel_for(g.Cg, threads_for_work(static_cast<double>(g.Cg) * g.Hp * g.Wp, threads), [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      uint8_t* d = dst + c * g.Hp * g.Wp;
      std::memset(d, pad, static_cast<size_t>(s.pad_top * g.Wp));
      for (int64_t h = 0; h < s.H; ++h) {
        uint8_t* row = d + (s.pad_top + h) * g.Wp;
        const uint8_t* src = x + (c * s.H + h) * s.W;
        for (int64_t w = 0; w < s.pad_left; ++w) row[w] = pad;
        for (int64_t w = 0; w < s.W; ++w) row[s.pad_left + w] = static_cast<uint8_t>(src[w] ^ flip);
        for (int64_t w = s.pad_left + s.W; w < g.Wp; ++w) row[w] = pad;
      }
      std::memset(d + (s.pad_top + s.H) * g.Wp, pad, static_cast<size_t>(s.pad_bottom * g.Wp));
    }
  });
}

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
  Geometry g(s, 0);
  return static_cast<size_t>(s.group) * packed_rows_bytes(k, g.Mg, g.Kc);
}

void qconv_pack_weight(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed) {
  Geometry g(s, 0);
  const size_t per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  for (int64_t gi = 0; gi < s.group; ++gi)
    pack_rows(k, reinterpret_cast<const uint8_t*>(w + gi * g.Mg * g.Kc), g.Kc, g.Mg, g.Kc, 0, packed + gi * per_group);
}

size_t qconv_workspace_bytes(const QKernels& k, const Conv2dShape& s, int threads) {
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  size_t most = 0;
  for (uint8_t flip : {0, 0x80}) {  // the layout (and so the size) depends on the flip
    Geometry g(s, flip);
    most = std::max(most, static_cast<size_t>(round_up(static_cast<int64_t>(packed_cols_bytes(k, g.Kc, g.N)), 64) +
                                              round_up(g.padded_bytes(), 64) + threads * 4 * round_up(g.P, 64)));
  }
  return most;
}

void qconv2d(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
             const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  Geometry g(s, flip);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  uint8_t* cols = workspace;
  uint8_t* padded = cols + round_up(static_cast<int64_t>(packed_cols_bytes(k, g.Kc, g.N)), 64);
  uint8_t* scratch = padded + round_up(g.padded_bytes(), 64);
  const int64_t row_bytes = round_up(g.P, 64);
  const size_t w_per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  const size_t osize = e.out == QType::F32 ? 4 : 1, rsize = e.residual_type == QType::F32 ? 4 : 1;
  const int pack_threads = threads_for_work(static_cast<double>(g.Kc) * g.N, threads);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      const uint8_t* xg = x + (n * s.C + gi * g.Cg) * s.H * s.W;
      if (g.how == Im2col::Padded) pad_planes(s, g, xg, flip, pad, padded, threads);
      // Each worker packs a contiguous range of 4-k groups (gathering into its own rows if needed).
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
              const int64_t c = kk / (s.R * s.S), rem = kk % (s.R * s.S), kh = rem / s.S, kw = rem % s.S;
              switch (g.how) {
                case Im2col::Direct: r[q] = xg + c * s.H * s.W; break;
                case Im2col::Padded: r[q] = padded + c * g.Hp * g.Wp + kh * s.dil_h * g.Wp + kw * s.dil_w; break;
                case Im2col::Gather:
                  gather_tap_row(s, xg + c * s.H * s.W, kh, kw, flip, pad, mine + q * row_bytes);
                  r[q] = mine + q * row_bytes;
                  break;
              }
            }
            pack_cols_group(k, r, g.N, kg, g.kgroups, cols);
          }
        }
      });
      QEpilogue eg = e;
      const int64_t ch0 = gi * g.Mg;
      eg.per_row = true;
      eg.scale = e.scale + ch0;
      if (e.bias) eg.bias = e.bias + ch0;
      if (e.bias_f) eg.bias_f = e.bias_f + ch0;
      if (g.how == Im2col::Padded) eg.grid_w = g.Wp, eg.grid_valid = s.out_w();
      const int64_t first = (n * s.K + ch0) * g.P;  // output element (n, ch0, 0, 0)
      if (e.residual) {
        eg.residual = static_cast<const char*>(e.residual) + first * rsize;
        eg.ldr = g.P;
      }
      qgemm_packed(k, true, g.Mg, g.N, g.Kc, packed_w + gi * w_per_group, cols, eg,
                   static_cast<char*>(y) + first * osize, g.P, threads);
    }
}

}  // namespace kiln::kernels::int8
