// Pieces of the planner shared between its files.
#pragma once
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kiln/plan/plan.h"

namespace kiln::plan {

// Execution order as indices into g.nodes().
std::vector<int> graph_order(const Graph& g);
// Greedy memory-aware order: among ready nodes, first the one whose outputs cost the fewest
// bytes net of the inputs it is the last reader of (ties: graph order). `bytes_of` gives a
// value's size (0 for values that take no arena bytes).
std::vector<int> memory_aware_order(const Graph& g, const std::unordered_map<const Value*, int64_t>& bytes_of);

// A block of arena bytes with a live range of steps [first, last] (inclusive).
struct Interval {
  int first = 0, last = 0;
  int64_t bytes = 0;   // already rounded to the alignment
  int64_t offset = -1;
};

// Gives every interval an offset so that no two intervals live at a common step overlap in
// bytes: greedy by size, best fit (the smallest gap between placed, time-overlapping intervals
// that holds it). With reuse = false intervals are laid out one after the other. Returns the
// arena size.
int64_t assign_offsets(std::vector<Interval>& intervals, bool reuse);

inline int64_t round_up(int64_t x, int64_t a) { return (x + a - 1) / a * a; }

}  // namespace kiln::plan
