// Pieces the two INT8 convolution paths share (qconv.cpp: packed im2col panels; qconv_quads.cpp:
// channel quads read in place): phase-plane geometry, one phase row's fill, the per-group epilogue.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8::detail {

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// The calling thread's scratch of at least `bytes`, 64-byte aligned: a vector of the thread's
// own, kept between calls (no allocation once warm), for the per-thread buffers of the INT8
// convolutions (packed panels, channel-major accumulators). Not slots of the arena: the arena
// lays each layer's workspace over the previous layers', so a slot was often lines the other
// core had written last, and every write to it waited for them (resnet50 INT8, 2 threads,
// paired ab_bench: 0.964, and 1.025 with the sides swapped).
inline uint8_t* thread_scratch(int64_t bytes) {
  thread_local std::vector<uint8_t> own;
  if (static_cast<int64_t>(own.size()) < bytes + 64) own.resize(static_cast<size_t>(bytes + 64));
  return reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(own.data()) + 63) & ~uintptr_t{63});
}

// used[p] = 1 when some tap (k * dil) % stride == p: only those phases are filled.
inline std::vector<char> used_phases(int64_t stride, int64_t taps, int64_t dil) {
  std::vector<char> used(static_cast<size_t>(stride), 0);
  for (int64_t t = 0; t < taps; ++t) used[static_cast<size_t>(t * dil % stride)] = 1;
  return used;
}

// Phase column pw of a row Wq wide: phase column j is input column first + j * stride_w, inside
// the input for j in [j_lo, j_hi).
struct PhaseColumns {
  int64_t first, j_lo, j_hi;
  PhaseColumns(const Conv2dShape& s, int64_t Wq, int64_t pw) : first(pw - s.pad_left) {
    j_lo = std::min(Wq, first >= 0 ? 0 : ceil_div(-first, s.stride_w));
    j_hi = std::max(j_lo, std::min(Wq, s.W - 1 - first >= 0 ? (s.W - 1 - first) / s.stride_w + 1 : 0));
  }
};

// One phase row of Wq bytes: `pad` outside [j_lo, j_hi), input row `row` (nullptr: a padding
// row) XOR flip inside.
void fill_phase_row(const uint8_t* row, const PhaseColumns& pc, int64_t stride_w, uint8_t flip, uint8_t pad,
                    int64_t Wq, uint8_t* dst);

// Each group's weights [Mg][Cg][taps] with k reordered for a path that reads its input in
// place: element (m, c, t) goes to column new_k(c, t) of an Mg x (Cg * taps) byte matrix,
// which pack(matrix, group index) then packs.
template <class NewK, class Pack>
void pack_reordered_weight(const Conv2dShape& s, const int8_t* w, NewK new_k, Pack pack) {
  const int64_t Cg = s.C / s.group, Mg = s.K / s.group, taps = s.R * s.S, Kc = Cg * taps;
  std::vector<uint8_t> ordered(static_cast<size_t>(Mg * Kc));
  for (int64_t gi = 0; gi < s.group; ++gi) {
    const int8_t* wg = w + gi * Mg * Kc;
    for (int64_t m = 0; m < Mg; ++m)
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t t = 0; t < taps; ++t)
          ordered[static_cast<size_t>(m * Kc + new_k(c, t))] = static_cast<uint8_t>(wg[(m * Cg + c) * taps + t]);
    pack(ordered.data(), gi);
  }
}

// The epilogue of image n, group gi, and where its output starts: e's per-channel arrays and
// residual moved to the group's first channel; the phase grid's width when it is wider than the
// output (grid_w != out_w; 0: columns are output positions).
struct GroupOutput {
  QEpilogue e;
  void* y = nullptr;
};
GroupOutput group_output(const QEpilogue& e, const Conv2dShape& s, int64_t n, int64_t gi, int64_t grid_w, void* y);

// The channel-quad path (qconv_quads.cpp): taken when the table has tile_s8u8_gather, each
// group's channel count is a multiple of 4 and the kernel has more than one tap, at stride 1.
bool qconv_uses_quads(const QKernels& k, const Conv2dShape& s);
void qconv_pack_weight_quads(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed);
size_t qconv_workspace_bytes_quads(const QKernels& k, const Conv2dShape& s);
void qconv2d_quads(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                   const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads);

// Whether the threads of a column-major path split its nr-column panels (or column windows)
// rather than its mr-row tiles (N GEMM columns, mt row tiles): the better balanced split, or
// `panels_on_tie` when they are within 2 % (qconv.cpp).
bool split_by_panels(const QKernels& k, int64_t N, int64_t mt, int threads, bool panels_on_tie);

// The GEMM columns the column-major paths compute over (quads' grid, or the phase grid / the
// output pixels of qconv.cpp's packed panels), for the pixels path's choice.
int64_t qconv_quads_columns(const Conv2dShape& s);
int64_t qconv_packed_columns(const Conv2dShape& s);

// The output-pixels-as-rows path (qconv_pixels.cpp): taken when the table has
// tile_u8s8_pixels and each group's channel count is a multiple of 4 (qconv_uses_pixels says
// for which shapes). Its packed weight is each group's cols operand, k ordered (tap, channel).
bool qconv_uses_pixels(const QKernels& k, const Conv2dShape& s);
size_t qconv_packed_weight_bytes_pixels(const QKernels& k, const Conv2dShape& s);
void qconv_pack_weight_pixels(const QKernels& k, const Conv2dShape& s, const int8_t* w, uint8_t* packed);
size_t qconv_workspace_bytes_pixels(const QKernels& k, const Conv2dShape& s, int threads);
void qconv2d_pixels(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                    const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads);

// The depthwise path (qdepthwise.cpp; qconv_is_depthwise says when): channel blocks of 8 through
// QKernels::depthwise_block, shared out as the f32 depthwise kernels are (depthwise_parts.h).
// The packed weight: blocks of 8 channels, each [R*S][8] floats (tap-major, zero past K); of 16
// for a pixel-major one (Conv2dShape::x_nhwc, QKernels::depthwise_nhwc).
size_t qdepthwise_packed_weight_bytes(const Conv2dShape& s);
void qdepthwise_pack_weight(const Conv2dShape& s, const int8_t* w, uint8_t* packed);
size_t qdepthwise_workspace_bytes(const Conv2dShape& s, int threads);
void qdepthwise(const QKernels& k, const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad,
                const uint8_t* packed_w, const QEpilogue& e, void* y, uint8_t* workspace, int threads);
// QKernels::depthwise_nhwc on AVX-512 (qdepthwise_nhwc_avx512.cpp): a depthwise convolution
// whose input and output are both pixel-major; packed_w as qdepthwise_pack_weight packs it
// (blocks of 16 channels).
void qdepthwise_nhwc_avx512(const Conv2dShape& s, const uint8_t* x, uint8_t flip, uint8_t pad, const float* packed_w,
                            const QEpilogue& e, void* y, int threads);
#if defined(__x86_64__)
// quantize_floats on AVX2 (qquantize_avx2.cpp): the values [0, returned count) in steps of 32;
// the caller finishes the rest.
int64_t quantize_floats_avx2(const float* x, int64_t n, float scale, float zp, float lo, float hi, bool is_signed,
                             uint8_t* y);
// lookup_bytes on AVX2 (qlookup_avx2.cpp).
void lookup_bytes_avx2(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n);
// QKernels::depthwise_block on AVX2 + FMA (qdepthwise_avx2.cpp), for every table past scalar.
void qdepthwise_block_avx2(const DepthwisePlane& g, const uint8_t* x, int64_t x_plane, int nc, uint8_t flip,
                           const float* w, float* scratch, const QEpilogue& e, void* out, int64_t out_plane);
#endif

}  // namespace kiln::kernels::int8::detail
