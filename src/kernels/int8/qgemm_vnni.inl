// The VNNI micro-kernel, written once for zmm (AVX-512 VNNI) and ymm (AVX-VNNI). The including
// file defines the vector type and operations:
//   QV             vector of int32 lanes            QV_LANES    int32 lanes per vector
//   QV_MR          rows of the register tile        QV_NV       vectors per tile row (nr = QV_NV * QV_LANES)
//   qv_zero()  qv_load(p)  qv_store(p, v)  qv_set1(int32)  qv_dpbusd(acc, u8 vector, s8 vector)
// One step of the k loop: load the nr x 4 cols group, then per row broadcast its 4 bytes and
// accumulate vpdpbusd (4 u8 x s8 products summed per int32 lane, exact).

namespace {

// The accumulators of one tile, left in registers (c), for the caller to store or requantize.
// Gather: cols group g is at cols + offsets[g] (bytes) instead of following the previous one.
// Only the first NV vectors of each cols group are read (a panel's last columns past the data:
// the others stay 0).
// row_init (optional): each row's accumulators start at row_init[r] instead of 0 (a fused
// epilogue's int32 bias, added exactly either way).
template <bool RowsSigned, bool Gather = false, int NV = QV_NV>
inline void vnni_accumulate(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets,
                            QV (&c)[QV_MR][QV_NV], const int32_t* row_init = nullptr) {
#pragma GCC unroll 16
  for (int r = 0; r < QV_MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < QV_NV; ++v) c[r][v] = row_init ? qv_set1(row_init[r]) : qv_zero();
  for (int64_t g = 0; g < kgroups; ++g) {
    const uint8_t* cg = Gather ? cols + offsets[g] : cols;
    QV b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) b[v] = qv_load(cg + v * QV_LANES * 4);
#pragma GCC unroll 16
    for (int r = 0; r < QV_MR; ++r) {
      int32_t word;
      std::memcpy(&word, rows + r * 4, 4);
      QV a = qv_set1(word);
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) c[r][v] = RowsSigned ? qv_dpbusd(c[r][v], b[v], a) : qv_dpbusd(c[r][v], a, b[v]);
    }
    rows += QV_MR * 4;
    if (!Gather) cols += QV_NV * QV_LANES * 4;
  }
}

// The "pixels" orientation (qconv_pixels.cpp): row r's bytes are read in place, from an image
// whose positions hold all channels together, as `runs` runs of `run_groups` consecutive 4-byte
// groups: group q of run u of row r is the 4 bytes at rows[r] + run_offsets[u] + 4 q (u8), and
// the cols panel (s8 weights) follows (u, q) in order.
inline void vnni_accumulate_pixels(const uint8_t* const* rows, const int64_t* run_offsets, int64_t runs,
                                   int64_t run_groups, const uint8_t* cols, QV (&c)[QV_MR][QV_NV]) {
#pragma GCC unroll 16
  for (int r = 0; r < QV_MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < QV_NV; ++v) c[r][v] = qv_zero();
  for (int64_t u = 0; u < runs; ++u) {
    const uint8_t* rp[QV_MR];
#pragma GCC unroll 16
    for (int r = 0; r < QV_MR; ++r) rp[r] = rows[r] + run_offsets[u];
    for (int64_t q = 0; q < run_groups; ++q) {
      QV b[QV_NV];
#pragma GCC unroll 4
      for (int v = 0; v < QV_NV; ++v) b[v] = qv_load(cols + v * QV_LANES * 4);
#pragma GCC unroll 16
      for (int r = 0; r < QV_MR; ++r) {
        int32_t word;
        std::memcpy(&word, rp[r] + q * 4, 4);
        const QV a = qv_set1(word);
#pragma GCC unroll 4
        for (int v = 0; v < QV_NV; ++v) c[r][v] = qv_dpbusd(c[r][v], a, b[v]);
      }
      cols += QV_NV * QV_LANES * 4;
    }
  }
}

inline void vnni_store(QV (&c)[QV_MR][QV_NV], int32_t* acc) {
#pragma GCC unroll 16
  for (int r = 0; r < QV_MR; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < QV_NV; ++v) qv_store(acc + (r * QV_NV + v) * QV_LANES, c[r][v]);
}

template <bool RowsSigned>
void vnni_tile(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int32_t* acc) {
  QV c[QV_MR][QV_NV];
  vnni_accumulate<RowsSigned>(kgroups, rows, cols, nullptr, c);
  vnni_store(c, acc);
}

void vnni_tile_gather(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets, int32_t* acc) {
  QV c[QV_MR][QV_NV];
  vnni_accumulate<true, true>(kgroups, rows, cols, offsets, c);
  vnni_store(c, acc);
}

// A QKernels with this file's tile (the including file adds its epilogue).
QKernels vnni_qkernels(QIsa isa) {
  QKernels k;
  k.isa = isa;
  k.mr = QV_MR;
  k.nr = QV_NV * QV_LANES;
  k.tile_s8u8 = vnni_tile<true>;
  k.tile_u8s8 = vnni_tile<false>;
  k.tile_s8u8_gather = vnni_tile_gather;
  return k;
}

}  // namespace
