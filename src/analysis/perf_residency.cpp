// Cache residency by reuse distance over the runtime's memory plan (perf_residency.h).
#include "perf_residency.h"

#include <algorithm>
#include <limits>
#include <set>

#include "kiln/ir/error.h"

namespace kiln::analysis {
namespace {

constexpr int64_t kPage = 4096;

struct Range {
  int64_t begin = 0, bytes = 0;
};

// Byte ranges in one address space: arena values at their offsets, every other value with bytes
// (inputs, weights, outputs, dynamic) after the arena in a range of its own, views as their root.
class AddressMap {
 public:
  explicit AddressMap(const plan::Plan& p) : p_(p), end_(round_up(p.arena_bytes)) {
    for (const auto& v : p.values)
      if (v.value && v.kind != plan::ValueKind::View && v.kind != plan::ValueKind::Arena && v.bytes > 0) {
        own_[v.value] = {end_, v.bytes};
        end_ += round_up(v.bytes);
      }
  }
  int64_t pages() const { return end_ / kPage; }
  // The bytes a value occupies; {0, 0} when it has none (dynamic shapes, not in the plan).
  Range of(const Value* v) const {
    for (int hops = 0; v && hops < 64; ++hops) {
      int i = p_.index_of(v);
      if (i < 0) return {};
      const plan::ValuePlan& vp = p_.values[static_cast<size_t>(i)];
      if (vp.kind == plan::ValueKind::Arena || (vp.kind == plan::ValueKind::View && vp.offset >= 0))
        return {vp.offset, vp.bytes};
      if (vp.kind != plan::ValueKind::View) {
        auto it = own_.find(v);
        return it == own_.end() ? Range{} : it->second;
      }
      const plan::ValuePlan* root = p_.find(vp.alias);
      v = root ? root->value : nullptr;
    }
    return {};
  }

 private:
  static int64_t round_up(int64_t b) { return (b + kPage - 1) / kPage * kPage; }
  const plan::Plan& p_;
  int64_t end_ = 0;
  std::unordered_map<const Value*, Range> own_;
};

}  // namespace

std::unordered_map<const Node*, KernelResidency> plan_residency(const plan::Plan& p,
                                                                const std::vector<int64_t>& capacities) {
  KILN_CHECK(capacities.size() < static_cast<size_t>(kMaxLevels), "residency: at most ", kMaxLevels - 1,
             " cache levels");
  const AddressMap map(p);
  const int dram = static_cast<int>(capacities.size());
  constexpr double kNever = -std::numeric_limits<double>::infinity();
  std::vector<double> last(static_cast<size_t>(map.pages()), kNever);  // clock at each page's last touch
  double clock = 0;  // bytes touched so far
  std::unordered_map<const Node*, KernelResidency> out;
  auto level = [&](double distance) {
    for (int l = 0; l < dram; ++l)
      if (distance <= static_cast<double>(capacities[static_cast<size_t>(l)])) return l;
    return dram;
  };
  // Adds each page's share of `r` to `into` at the level its reuse distance gives.
  auto classify = [&](const Range& r, double working_set, std::array<double, kMaxLevels>& into) {
    for (int64_t a = r.begin; a < r.begin + r.bytes; a = (a / kPage + 1) * kPage) {
      const int64_t page_end = std::min((a / kPage + 1) * kPage, r.begin + r.bytes);
      const double seen = last[static_cast<size_t>(a / kPage)];
      into[static_cast<size_t>(seen == kNever ? dram : level(clock - seen + working_set))] +=
          static_cast<double>(page_end - a);
    }
  };
  auto touch = [&](const Range& r) {
    for (int64_t pg = r.begin / kPage; pg * kPage < r.begin + r.bytes; ++pg) last[static_cast<size_t>(pg)] = clock;
  };
  for (int walk = 0; walk < 2; ++walk) {
    for (const plan::StepPlan& step : p.steps) {
      if (!step.node) continue;
      std::vector<const Value*> read_values;
      plan::collect_reads(*step.node, read_values);
      // Distinct ranges read and written (two inputs may be one tensor, or views of one).
      std::vector<std::pair<Range, bool>> reads;  // (range, is a weight)
      std::vector<Range> writes;
      std::set<int64_t> seen_begin;
      double working_set = 0;
      for (const Value* v : read_values) {
        Range r = map.of(v);
        if (r.bytes <= 0 || !seen_begin.insert(r.begin).second) continue;
        const int i = p.index_of(v);
        reads.push_back({r, i >= 0 && p.values[static_cast<size_t>(i)].kind == plan::ValueKind::Weight});
        working_set += static_cast<double>(r.bytes);
      }
      for (const Value* v : step.node->outputs) {
        Range r = map.of(v);
        if (r.bytes <= 0) continue;
        writes.push_back(r);
        // Written in place of an input: the same lines, counted once in the working set.
        if (seen_begin.insert(r.begin).second) working_set += static_cast<double>(r.bytes);
      }
      if (reads.empty() && writes.empty()) continue;
      const Range scratch{step.scratch_offset, step.scratch_offset >= 0 ? step.scratch_bytes : 0};
      if (walk == 1) {
        KernelResidency& k = out[step.node];
        for (const auto& [r, weight] : reads) classify(r, working_set, weight ? k.weights : k.read);
        for (const Range& r : writes) classify(r, working_set, k.written);
      }
      clock += working_set + static_cast<double>(scratch.bytes);
      for (const auto& [r, weight] : reads) touch(r);
      for (const Range& r : writes) touch(r);
      if (scratch.bytes > 0) touch(scratch);
    }
  }
  return out;
}

}  // namespace kiln::analysis
