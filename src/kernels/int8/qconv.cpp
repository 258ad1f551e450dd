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

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::int8 {
namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

struct Geometry {
  int64_t P, Cg, Mg, Kc, kgroups;
  bool direct;        // the input planes are read as they are
  int64_t Hq, Wq, N;  // phase plane; GEMM columns (P, or (OH-1)*Wq + OW on the phase grid)
  Geometry(const Conv2dShape& s, uint8_t flip)
      : P(s.out_h() * s.out_w()), Cg(s.C / s.group), Mg(s.K / s.group), Kc(Cg * s.R * s.S), kgroups(ceil_div(Kc, 4)) {
    const bool unpadded = s.pad_top == 0 && s.pad_left == 0 && s.pad_bottom == 0 && s.pad_right == 0;
    direct = s.stride_h == 1 && s.stride_w == 1 && s.R == 1 && s.S == 1 && unpadded && flip == 0;
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

// The group's phase planes that some tap reads: `pad` outside the input, x XOR flip inside.
void fill_phase_planes(const Conv2dShape& s, const Geometry& g, const uint8_t* x, uint8_t flip, uint8_t pad,
                       uint8_t* dst, int threads) {
  std::vector<char> used_h(static_cast<size_t>(s.stride_h), 0), used_w(static_cast<size_t>(s.stride_w), 0);
  for (int64_t kh = 0; kh < s.R; ++kh) used_h[static_cast<size_t>(kh * s.dil_h % s.stride_h)] = 1;
  for (int64_t kw = 0; kw < s.S; ++kw) used_w[static_cast<size_t>(kw * s.dil_w % s.stride_w)] = 1;
  const int64_t phases = s.stride_h * s.stride_w, plane = g.Hq * g.Wq;
  parallel_for(g.Cg * phases, threads_for_work(static_cast<double>(g.Cg) * plane * phases, threads), [&](int64_t b,
                                                                                                          int64_t e) {
    for (int64_t cp = b; cp < e; ++cp) {
      const int64_t c = cp / phases, ph = cp % phases / s.stride_w, pw = cp % s.stride_w;
      if (!used_h[static_cast<size_t>(ph)] || !used_w[static_cast<size_t>(pw)]) continue;
      uint8_t* d = dst + cp * plane;
      const int64_t first = pw - s.pad_left;  // input column of phase column 0
      const int64_t j_lo = std::min(g.Wq, first >= 0 ? 0 : ceil_div(-first, s.stride_w));
      const int64_t j_hi = std::max(j_lo, std::min(g.Wq, s.W - 1 - first >= 0 ? (s.W - 1 - first) / s.stride_w + 1 : 0));
      for (int64_t i = 0; i < g.Hq; ++i, d += g.Wq) {
        const int64_t ih = i * s.stride_h + ph - s.pad_top;
        if (ih < 0 || ih >= s.H) {
          std::memset(d, pad, static_cast<size_t>(g.Wq));
          continue;
        }
        const uint8_t* row = x + (c * s.H + ih) * s.W;
        for (int64_t j = 0; j < j_lo; ++j) d[j] = pad;
        for (int64_t j = j_lo; j < j_hi; ++j) d[j] = static_cast<uint8_t>(row[j * s.stride_w + first] ^ flip);
        for (int64_t j = j_hi; j < g.Wq; ++j) d[j] = pad;
      }
    }
  });
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
  (void)threads;
  size_t most = 0;
  for (uint8_t flip : {0, 0x80}) {  // the layout (and so the size) depends on the flip
    Geometry g(s, flip);
    most = std::max(most, static_cast<size_t>(round_up(static_cast<int64_t>(packed_cols_bytes(k, g.Kc, g.N)), 64) +
                                              round_up(g.phase_bytes(s), 64)));
  }
  return most;
}

void qconv2d(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
             const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads) {
  Geometry g(s, flip);
  threads = std::max(1, threads <= 0 ? default_threads() : threads);
  uint8_t* cols = workspace;
  uint8_t* phases = cols + round_up(static_cast<int64_t>(packed_cols_bytes(k, g.Kc, g.N)), 64);
  const size_t w_per_group = packed_rows_bytes(k, g.Mg, g.Kc);
  const size_t osize = e.out == QType::F32 ? 4 : 1, rsize = e.residual_type == QType::F32 ? 4 : 1;
  const int pack_threads = threads_for_work(static_cast<double>(g.Kc) * g.N, threads);
  for (int64_t n = 0; n < s.N; ++n)
    for (int64_t gi = 0; gi < s.group; ++gi) {
      const uint8_t* xg = x + (n * s.C + gi * g.Cg) * s.H * s.W;
      if (!g.direct) fill_phase_planes(s, g, xg, flip, pad, phases, threads);
      // Each worker packs a contiguous range of 4-k groups.
      parallel_for(pack_threads, pack_threads, [&](int64_t tb, int64_t te) {
        for (int64_t t = tb; t < te; ++t) {
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
              r[q] = g.direct ? xg + c * s.H * s.W : phases + g.tap_offset(s, c, rem / s.S, rem % s.S);
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
      if (!g.direct) eg.grid_w = g.Wq, eg.grid_valid = s.out_w();
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
