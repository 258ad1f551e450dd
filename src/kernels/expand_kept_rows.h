// The switches of kernels::expand_depthwise (conv_expand_depthwise.cpp): its kept rows (a band's
// input rows that the band its thread ran before also read are moved up in the band buffer
// instead of expanded again) and its 16-channel expanded blocks.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

namespace kiln::kernels::detail {

// KILN_EXPAND_KEEP_ROWS=0 in the environment at start-up turns it off (every band expands all the
// rows its windows reach: an A/B between processes); in-process A/B harnesses flip it between
// calls. Same floats either way: a kept row is the bits the same expand wrote.
extern bool expand_keeps_rows;

// The expanded rows in 16-channel blocks, the depthwise windows read from them in place
// (depthwise_wide_in_place_avx512, one vector a pixel: 9 FMAs a 3x3 window of 16 channels where
// the 8-channel kernels take 18 256-bit ones, or 9 with a lane shuffle each): where the table is
// AVX-512, the channels come in 16s and no average is folded (wide_mid in the .cpp). KILN_EXPAND_WIDE=0 at start-up
// turns it off; in-process A/B harnesses flip it between calls. Same floats either way.
extern bool expand_wide_mid_enabled;

// The rows a thread's band buffer holds from the band it ran last: input rows [r0, r0 + rows) of
// image n, in the buffer at `mid`, in call `call` of the banded kernel (each call numbered by
// next_banded_call, so that rows from an earlier call, of other weights or another input, never
// count). expand_depthwise and stem_depthwise_project keep them.
struct KeptRows {
  uint64_t call = 0;
  int64_t n = -1;
  const float* mid = nullptr;
  int64_t r0 = 0, rows = 0;
  // How many of input rows [first, first + count) of image `image`, from first on, the buffer
  // `at` holds in call `c`.
  int64_t shared(uint64_t c, int64_t image, const float* at, int64_t first, int64_t count) const {
    if (c != call || image != n || at != mid || first < r0 || first >= r0 + rows) return 0;
    return std::min(r0 + rows - first, count);
  }
  // A band of input rows [first, first + count) of image `image` in call `c` about to use the
  // buffer `buf` (`blocks` planes `plane` floats apart, `row_floats` a row): when `keep`, the
  // rows it shares with the band before are moved up to the top of each plane; records the new
  // band and returns how many rows it already holds (0 without `keep`).
  int64_t take(uint64_t c, int64_t image, float* buf, int64_t first, int64_t count, int64_t blocks, int64_t plane,
               int64_t row_floats, bool keep = true) {
    const int64_t kept = keep ? shared(c, image, buf, first, count) : 0;
    if (kept > 0 && r0 != first)
      for (int64_t k = 0; k < blocks; ++k)
        std::memmove(buf + k * plane, buf + k * plane + (first - r0) * row_floats, sizeof(float) * kept * row_floats);
    *this = KeptRows{c, image, buf, first, count};
    return kept;
  }
};

// A number no earlier call of a banded kernel had (process-wide).
uint64_t next_banded_call();

}  // namespace kiln::kernels::detail
