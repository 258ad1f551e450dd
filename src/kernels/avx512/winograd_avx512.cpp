// The F(2x2, 3x3) Winograd transforms on channel blocks (conv_winograd.h): a vector is one
// pixel's 16 channels, so both transforms are adds and subtracts of whole vectors.
#include <immintrin.h>

#include "../conv_winograd.h"

namespace kiln::kernels::detail {
namespace {

// Bᵀ d B's rows for one column of four (or Aᵀ's two for the output): d0 - d2, d1 + d2, d2 - d1, d1 - d3.
inline void bt4(const __m512 d[4], __m512 o[4]) {
  o[0] = _mm512_sub_ps(d[0], d[2]);
  o[1] = _mm512_add_ps(d[1], d[2]);
  o[2] = _mm512_sub_ps(d[2], d[1]);
  o[3] = _mm512_sub_ps(d[1], d[3]);
}

// 16 channels of one pixel: at `p` in a 16-channel plane, or 8 at `p` and 8 one plane further.
inline __m512 load16(const float* p, int64_t block, int64_t plane) {
  if (block == 16) return _mm512_loadu_ps(p);
  return _mm512_insertf32x8(_mm512_castps256_ps512(_mm256_loadu_ps(p)), _mm256_loadu_ps(p + plane), 1);
}
inline void store16(float* p, int64_t block, int64_t plane, __m512 v) {
  if (block == 16) return _mm512_storeu_ps(p, v);
  _mm256_storeu_ps(p, _mm512_castps512_ps256(v));
  _mm256_storeu_ps(p + plane, _mm512_extractf32x8_ps(v, 1));
}

}  // namespace

void winograd_input_avx512(const WinogradInput& in, int64_t tw, int64_t t0, int64_t count, float* V,
                           int64_t xi_stride) {
  const int64_t C = in.groups * 16, plane = in.ph * in.pw * in.block, B = in.block;
  for (int64_t i = 0; i < count; ++i) {
    const int64_t ty = (t0 + i) / tw, tx = (t0 + i) % tw;
    const int64_t r0 = in.row0 + 2 * ty, c0 = in.col0 + 2 * tx;
    // Tiles whose 4x4 window lies inside the stored plane load it as is; the others (the
    // image's border when its padding is not stored, an odd size's last tile) read zeros
    // outside it.
    const bool inside = r0 >= 0 && c0 >= 0 && r0 + 4 <= in.ph && c0 + 4 <= in.pw;
    for (int64_t cb = 0; cb < in.groups; ++cb) {
      const float* src = in.x + cb * (16 / B) * plane + (r0 * in.pw + c0) * B;
      __m512 d[4][4];
      for (int r = 0; r < 4; ++r)
        for (int c = 0; c < 4; ++c) {
          const bool ok = inside || (r0 + r >= 0 && r0 + r < in.ph && c0 + c >= 0 && c0 + c < in.pw);
          d[r][c] = ok ? load16(src + (r * in.pw + c) * B, B, plane) : _mm512_setzero_ps();
        }
      // Bᵀ d: down each column; then (Bᵀ d) B: along each row.
      __m512 s[4][4];
      for (int c = 0; c < 4; ++c) {
        const __m512 col[4] = {d[0][c], d[1][c], d[2][c], d[3][c]};
        __m512 o[4];
        bt4(col, o);
        for (int r = 0; r < 4; ++r) s[r][c] = o[r];
      }
      float* dst = V + i * C + cb * 16;
      for (int r = 0; r < 4; ++r) {
        __m512 o[4];
        bt4(s[r], o);
        for (int c = 0; c < 4; ++c) _mm512_storeu_ps(dst + (r * 4 + c) * xi_stride, o[c]);
      }
    }
  }
}

void winograd_output_avx512(const WinogradOutput& out, int64_t tw, int64_t t0, int64_t count, const float* M,
                            int64_t xi_stride) {
  const int64_t K = out.groups * 16, plane = out.ph * out.pw * out.block, B = out.block;
  const int64_t res_plane = out.oh * out.ow * B;  // the residual's planes are not padded
  const __m512 alpha = _mm512_set1_ps(out.alpha), zero = _mm512_setzero_ps();
  const __m512 lo = _mm512_set1_ps(out.act_alpha), hi = _mm512_set1_ps(out.act_beta);
  auto finish = [&](__m512 v, __m512 bias, const float* res) {
    if (out.alpha != 1.f) v = _mm512_mul_ps(v, alpha);
    if (out.bias) v = _mm512_add_ps(v, bias);
    if (res) v = _mm512_add_ps(v, load16(res, B, res_plane));
    switch (out.act) {
      case Act::Relu: return _mm512_max_ps(v, zero);
      case Act::Clip: return _mm512_min_ps(_mm512_max_ps(v, lo), hi);
      case Act::LeakyRelu: return _mm512_mask_mul_ps(v, _mm512_cmp_ps_mask(v, zero, _CMP_LT_OQ), v, lo);
      default: return v;
    }
  };
  for (int64_t i = 0; i < count; ++i) {
    const int64_t ty = (t0 + i) / tw, tx = (t0 + i) % tw;
    const int rows = out.oh - 2 * ty >= 2 ? 2 : 1, cols = out.ow - 2 * tx >= 2 ? 2 : 1;
    for (int64_t kb = 0; kb < out.groups; ++kb) {
      const float* src = M + i * K + kb * 16;
      // Aᵀ m: rows m0 + m1 + m2 and m1 - m2 - m3 of each column; then along each row.
      __m512 s[2][4];
      for (int c = 0; c < 4; ++c) {
        const __m512 m0 = _mm512_loadu_ps(src + (0 * 4 + c) * xi_stride);
        const __m512 m1 = _mm512_loadu_ps(src + (1 * 4 + c) * xi_stride);
        const __m512 m2 = _mm512_loadu_ps(src + (2 * 4 + c) * xi_stride);
        const __m512 m3 = _mm512_loadu_ps(src + (3 * 4 + c) * xi_stride);
        s[0][c] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
        s[1][c] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
      }
      float* dst = out.y + kb * (16 / B) * plane + ((out.row0 + 2 * ty) * out.pw + out.col0 + 2 * tx) * B;
      const float* res =
          out.residual ? out.residual + kb * (16 / B) * res_plane + (2 * ty * out.ow + 2 * tx) * B : nullptr;
      const __m512 bias = out.bias ? _mm512_loadu_ps(out.bias + kb * 16) : zero;
      for (int r = 0; r < rows; ++r) {
        const float* rr = res ? res + r * out.ow * B : nullptr;
        store16(dst + r * out.pw * B, B, plane,
                finish(_mm512_add_ps(_mm512_add_ps(s[r][0], s[r][1]), s[r][2]), bias, rr));
        if (cols == 2)
          store16(dst + r * out.pw * B + B, B, plane,
                  finish(_mm512_sub_ps(_mm512_sub_ps(s[r][1], s[r][2]), s[r][3]), bias, rr ? rr + B : nullptr));
      }
    }
  }
}

}  // namespace kiln::kernels::detail
