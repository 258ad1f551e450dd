// The plan as JSON (plan.json in the artifact) and as a text report (`kiln compile --report`).
#include <algorithm>
#include <cstdio>

#include "kiln/plan/json.h"
#include "kiln/plan/plan.h"

namespace kiln::plan {
namespace {

std::string human_bytes(int64_t b) {
  char buf[32];
  if (b < 1024) std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  else if (b < (int64_t{1} << 20)) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024.0);
  else std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1024.0 * 1024.0));
  return buf;
}

}  // namespace

std::string Plan::to_json() const {
  json::Value root;
  root.set("alignment", alignment);
  root.set("arena_bytes", arena_bytes);
  root.set("intermediate_bytes", intermediate_bytes);
  root.set("lower_bound_bytes", lower_bound_bytes);
  root.set("lower_bound_step", lower_bound_step);
  json::Value& steps_json = root.set("steps", json::Array{});
  for (const StepPlan& s : steps) {
    json::Value st;
    st.set("node", s.name);
    st.set("op", s.op);
    if (s.scratch_bytes > 0) {
      st.set("scratch_offset", s.scratch_offset);
      st.set("scratch_bytes", s.scratch_bytes);
    }
    steps_json.push(std::move(st));
  }
  json::Value& values_json = root.set("values", json::Array{});
  for (const ValuePlan& v : values) {
    json::Value e;
    e.set("name", v.name);
    e.set("kind", value_kind_name(v.kind));
    e.set("dtype", dtype_name(v.dtype));
    json::Array dims;
    for (int64_t d : v.dims) dims.emplace_back(d);
    e.set("dims", std::move(dims));
    e.set("bytes", v.bytes);
    e.set("offset", v.offset);
    e.set("first", v.first);
    e.set("last", v.last);
    if (!v.alias.empty()) e.set("alias", v.alias);
    if (v.in_place) e.set("in_place", true);
    values_json.push(std::move(e));
  }
  return root.dump(1) + "\n";
}

std::string Plan::report() const {
  int counts[6] = {};
  int in_place = 0;
  for (const ValuePlan& v : values) {
    ++counts[static_cast<int>(v.kind)];
    in_place += v.in_place;
  }
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line,
                "memory plan: %zu steps; values: %d inputs, %d weights, %d in the arena (%d in place), %d views, "
                "%d dynamic, %d outputs\n",
                steps.size(), counts[0], counts[1], counts[2], in_place, counts[3], counts[4], counts[5]);
  out += line;
  std::snprintf(line, sizeof line, "  arena (peak)             %12s  %lld bytes\n", human_bytes(arena_bytes).c_str(),
                static_cast<long long>(arena_bytes));
  out += line;
  std::snprintf(line, sizeof line, "  sum of intermediates     %12s  (every value its own bytes)\n",
                human_bytes(intermediate_bytes).c_str());
  out += line;
  std::string at = lower_bound_step >= 0 ? " at step " + std::to_string(lower_bound_step) + " (" +
                                               steps[lower_bound_step].op + " '" + steps[lower_bound_step].name + "')"
                                         : "";
  std::snprintf(line, sizeof line, "  lower bound (max live)   %12s  %s\n", human_bytes(lower_bound_bytes).c_str(),
                at.c_str());
  out += line;
  if (lower_bound_bytes > 0) {
    std::snprintf(line, sizeof line, "  arena / lower bound      %12.3f\n",
                  static_cast<double>(arena_bytes) / static_cast<double>(lower_bound_bytes));
    out += line;
  }
  std::vector<const ValuePlan*> arena;
  for (const ValuePlan& v : values)
    if (v.kind == ValueKind::Arena) arena.push_back(&v);
  std::stable_sort(arena.begin(), arena.end(), [](const ValuePlan* a, const ValuePlan* b) { return a->bytes > b->bytes; });
  if (!arena.empty()) out += "  largest arena values (offset, bytes, steps):\n";
  for (size_t i = 0; i < std::min<size_t>(arena.size(), 10); ++i) {
    const ValuePlan& v = *arena[i];
    std::snprintf(line, sizeof line, "    %-32s %12lld %12s  %d..%d%s\n", v.name.c_str(),
                  static_cast<long long>(v.offset), human_bytes(v.bytes).c_str(), v.first, v.last,
                  v.in_place ? ("  in place of " + v.alias).c_str() : "");
    out += line;
  }
  return out;
}

}  // namespace kiln::plan
