// The portable path: plain loops over the packed panels, and the epilogue formula element by
// element (the definition the vector paths match bit for bit).
#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8 {
namespace {

constexpr int kMr = 4, kNr = 8;

// Gather: cols group g is at cols + offsets[g] instead of following the previous one.
template <bool RowsSigned, bool Gather = false>
void tile_scalar(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, const int64_t* offsets, int32_t* acc) {
  for (int i = 0; i < kMr * kNr; ++i) acc[i] = 0;
  const uint8_t* next = cols;
  for (int64_t g = 0; g < kgroups; ++g) {
    cols = Gather ? next + offsets[g] : cols;
    for (int r = 0; r < kMr; ++r)
      for (int j = 0; j < kNr; ++j) {
        int32_t s = 0;
        for (int t = 0; t < 4; ++t) {
          int32_t a = RowsSigned ? static_cast<int8_t>(rows[r * 4 + t]) : rows[r * 4 + t];
          int32_t b = RowsSigned ? cols[j * 4 + t] : static_cast<int8_t>(cols[j * 4 + t]);
          s += a * b;
        }
        acc[r * kNr + j] += s;
      }
    rows += kMr * 4;
    if (!Gather) cols += kNr * 4;
  }
}

template <bool RowsSigned>
void tile_scalar_packed(int64_t kgroups, const uint8_t* rows, const uint8_t* cols, int32_t* acc) {
  tile_scalar<RowsSigned>(kgroups, rows, cols, nullptr, acc);
}

void epilogue_scalar(const int32_t* acc, int nr, int rows, int cols, const QEpilogue& e, int64_t row0, int64_t col0,
                     void* out, int64_t ldo) {
  for (int r = 0; r < rows; ++r)
    for (int j = 0; j < cols; ++j) epilogue_element(e, acc[r * nr + j], row0 + r, col0 + j, out, ldo);
}

}  // namespace

QKernels make_scalar_qkernels() {
  QKernels k;
  k.isa = QIsa::Scalar;
  k.mr = kMr;
  k.nr = kNr;
  k.tile_s8u8 = tile_scalar_packed<true>;
  k.tile_u8s8 = tile_scalar_packed<false>;
  k.tile_s8u8_gather = tile_scalar<true, true>;
  k.epilogue = epilogue_scalar;
  return k;
}

}  // namespace kiln::kernels::int8
