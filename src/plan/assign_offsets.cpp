// Offset assignment for the arena: greedy by size with best fit, the heuristic TFLite's arena
// planner and XLA's heap simulator both found to land close to the lower bound on real models.
// Large buffers are placed first because they are the hardest to fit; each then takes the
// tightest gap among the buffers it must not overlap, which leaves large gaps for later ones.
#include <algorithm>
#include <numeric>

#include "plan_internal.h"

namespace kiln::plan {

int64_t assign_offsets(std::vector<Interval>& iv, bool reuse) {
  int64_t arena = 0;
  if (!reuse) {
    for (Interval& b : iv) {
      b.offset = arena;
      arena += b.bytes;
    }
    return arena;
  }
  std::vector<size_t> by_size(iv.size());
  std::iota(by_size.begin(), by_size.end(), size_t{0});
  std::stable_sort(by_size.begin(), by_size.end(), [&](size_t a, size_t b) {
    if (iv[a].bytes != iv[b].bytes) return iv[a].bytes > iv[b].bytes;
    return iv[a].first < iv[b].first;
  });
  std::vector<size_t> placed;  // kept sorted by offset
  std::vector<size_t> overlapping;
  for (size_t i : by_size) {
    Interval& b = iv[i];
    if (b.bytes == 0) {
      b.offset = 0;
      continue;
    }
    overlapping.clear();
    for (size_t p : placed)
      if (iv[p].first <= b.last && b.first <= iv[p].last) overlapping.push_back(p);
    int64_t best = -1, best_gap = INT64_MAX, end = 0;
    for (size_t p : overlapping) {  // in offset order
      int64_t gap = iv[p].offset - end;
      if (gap >= b.bytes && gap < best_gap) {
        best = end;
        best_gap = gap;
      }
      end = std::max(end, iv[p].offset + iv[p].bytes);
    }
    b.offset = best >= 0 ? best : end;
    arena = std::max(arena, b.offset + b.bytes);
    auto pos = std::upper_bound(placed.begin(), placed.end(), i,
                                [&](size_t x, size_t y) { return iv[x].offset < iv[y].offset; });
    placed.insert(pos, i);
  }
  return arena;
}

}  // namespace kiln::plan
