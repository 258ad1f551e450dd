// The chip database: parsing chip files, the shipped chips, and this machine as a chip.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "kiln/analysis/chip.h"
#include "kiln/analysis/profile.h"
#include "kiln/ir/error.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

namespace {
struct PrecisionInfo {
  Precision p;
  std::string_view name;
  double bytes;
};
constexpr PrecisionInfo kPrecisions[] = {{Precision::fp32, "fp32", 4}, {Precision::tf32, "tf32", 4},
                                         {Precision::bf16, "bf16", 2}, {Precision::fp16, "fp16", 2},
                                         {Precision::int8, "int8", 1}, {Precision::fp8, "fp8", 1}};

std::string precision_choices() {
  std::string s;
  for (const auto& i : kPrecisions) s += (s.empty() ? "" : ", ") + std::string(i.name);
  return s;
}
}  // namespace

std::string_view precision_name(Precision p) {
  for (const auto& i : kPrecisions)
    if (i.p == p) return i.name;
  return "?";
}

Precision precision_from_name(std::string_view name) {
  for (const auto& i : kPrecisions)
    if (i.name == name) return i.p;
  throw Error(str_cat("unknown precision '", name, "' (", precision_choices(), ")"));
}

double precision_bytes(Precision p) {
  for (const auto& i : kPrecisions)
    if (i.p == p) return i.bytes;
  return 4;
}

const std::vector<Precision>& all_precisions() {
  static const std::vector<Precision> all = [] {
    std::vector<Precision> v;
    for (const auto& i : kPrecisions) v.push_back(i.p);
    return v;
  }();
  return all;
}

double Chip::peak_flops(Precision p) const {
  auto it = peak_tflops.find(p);
  if (it == peak_tflops.end()) {
    std::string have;
    for (const auto& [q, v] : peak_tflops) have += (have.empty() ? "" : ", ") + std::string(precision_name(q));
    throw Error(str_cat(id, " has no ", precision_name(p), " peak (it has: ", have.empty() ? "none" : have, ")"));
  }
  return it->second * 1e12;
}

namespace {

// Typed access to one object's members, each error one line naming the file and the key.
class Fields {
 public:
  Fields(const json::Value& obj, std::string origin, std::string where, std::set<std::string> allowed)
      : obj_(obj), origin_(std::move(origin)), where_(std::move(where)) {
    KILN_CHECK(obj.is_object(), origin_, ": ", where_.empty() ? "the file" : where_, " must be a JSON object, not ",
               json::kind_name(obj.kind()));
    for (const auto& [k, v] : obj.as_object(origin_)) {
      if (allowed.count(k)) continue;
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw Error(str_cat(origin_, ": unknown key \"", prefix(), k, "\" (known: ", list, ")"));
    }
  }

  const json::Value* get(const std::string& key, json::Kind kind, bool required) const {
    const json::Value* v = obj_.find(key);
    if (!v) {
      KILN_CHECK(!required, origin_, ": missing \"", prefix(), key, "\"");
      return nullptr;
    }
    KILN_CHECK(v->kind() == kind, origin_, ": \"", prefix(), key, "\" must be ", json::kind_name(kind), ", not ",
               json::kind_name(v->kind()));
    return v;
  }
  std::string string(const std::string& key, bool required) const {
    const json::Value* v = get(key, json::Kind::string, required);
    return v ? v->as_string(origin_) : "";
  }
  // A number > 0 (or >= 0 with allow_zero); absent optional numbers read as `dflt`.
  double number(const std::string& key, bool required, double dflt = 0, bool allow_zero = false) const {
    const json::Value* v = get(key, json::Kind::number, required);
    if (!v) return dflt;
    double x = v->as_double(origin_);
    KILN_CHECK(allow_zero ? x >= 0 : x > 0, origin_, ": \"", prefix(), key, "\" must be ",
               allow_zero ? "zero or positive" : "positive", ", got ", x);
    return x;
  }
  std::string prefix() const { return where_.empty() ? "" : where_ + "."; }

 private:
  const json::Value& obj_;
  std::string origin_, where_;
};

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

Chip parse_chip_json(const std::string& text, const std::string& origin) {
  json::Value j = json::parse(text, origin);
  Fields top(j, origin, "",
             {"name", "source", "peak_tflops", "vector_tflops", "memory_gbs", "memory_gib", "launch_overhead_us",
              "launch_overhead_source", "workspace_mib", "device_memory", "interconnect", "notes", "measured"});
  Chip c;
  c.id = std::filesystem::path(origin).stem().string();
  c.name = top.string("name", true);
  c.source = top.string("source", true);
  KILN_CHECK(!c.source.empty(), origin, ": \"source\" must say where the numbers come from");
  std::set<std::string> precisions;
  for (Precision p : all_precisions()) precisions.insert(std::string(precision_name(p)));
  Fields peaks(*top.get("peak_tflops", json::Kind::object, true), origin, "peak_tflops", precisions);
  for (Precision p : all_precisions())
    if (peaks.get(std::string(precision_name(p)), json::Kind::number, false))
      c.peak_tflops[p] = peaks.number(std::string(precision_name(p)), true);
  KILN_CHECK(!c.peak_tflops.empty(), origin, ": \"peak_tflops\" lists no precision (", precision_choices(), ")");
  double fp32 = c.peak_tflops.count(Precision::fp32) ? c.peak_tflops[Precision::fp32] : 0;
  c.vector_tflops = top.number("vector_tflops", fp32 == 0, fp32);
  c.memory_gbs = top.number("memory_gbs", true);
  c.memory_bytes = static_cast<int64_t>(top.number("memory_gib", true) * kGiB);
  c.launch_overhead_us = top.number("launch_overhead_us", true, 0, true);
  top.string("launch_overhead_source", false);
  c.workspace_bytes = static_cast<int64_t>(top.number("workspace_mib", false, 0, true) * 1024 * 1024);
  if (const json::Value* d = top.get("device_memory", json::Kind::boolean, false)) c.device_memory = d->as_bool(origin);
  if (const json::Value* ic = top.get("interconnect", json::Kind::object, false)) {
    Fields f(*ic, origin, "interconnect", {"nvlink_gbs", "pcie_gbs", "link_latency_us", "note"});
    // Files quote datasheet figures (both directions summed); a ring moves data one way.
    c.nvlink_gbs = f.number("nvlink_gbs", false, 0, true) / 2;
    c.pcie_gbs = f.number("pcie_gbs", false, 0, true) / 2;
    c.link_latency_us = f.number("link_latency_us", false, 0, true);
    f.string("note", false);
  }
  top.string("notes", false);
  top.get("measured", json::Kind::object, false);  // free-form validation record (docs/perf.md)
  return c;
}

Chip load_chip_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), path, ": cannot open chip file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_chip_json(text, path);
}

Chip chip_from_machine(const MachinePeaks& m) {
  Chip c;
  c.id = "cpu";
  c.name = m.cpu + " (" + std::to_string(m.cores) + " cores)";
  c.source = "kiln machine: measured on this machine (" + m.key + ")";
  c.peak_tflops[Precision::fp32] = m.fp32_gflops_all_cores / 1e3;
  if (m.bf16_gflops_all_cores) c.peak_tflops[Precision::bf16] = *m.bf16_gflops_all_cores / 1e3;
  if (m.int8_gops_all_cores) c.peak_tflops[Precision::int8] = *m.int8_gops_all_cores / 1e3;
  c.vector_tflops = m.fp32_gflops_all_cores / 1e3;
  c.memory_gbs = m.dram_gbs_all_cores;
  c.memory_bytes = m.memory_bytes;
  // Handing a kernel to a warm thread pool and joining it: a few microseconds, not measured.
  c.launch_overhead_us = 2;
  c.machine = m;
  c.threads = m.cores;
  return c;
}

Chip chip_from_machine(const MachinePeaks& m, int threads) {
  KILN_CHECK(threads >= 1, "--threads must be at least 1");
  Chip c = chip_from_machine(m);
  Roof r = roof_for(m, threads);
  double scale = r.peak_gflops / m.fp32_gflops_all_cores;  // every precision's peak scales as FP32's
  for (auto& [p, tflops] : c.peak_tflops) tflops *= scale;
  c.vector_tflops = r.peak_gflops / 1e3;
  c.memory_gbs = r.bandwidth_gbs;
  c.launch_overhead_us = measure_dispatch_us(threads);
  c.threads = std::min(threads, m.cores);
  c.name = m.cpu + " (" + std::to_string(c.threads) + (c.threads == 1 ? " thread)" : " threads)");
  return c;
}

std::vector<std::string> default_chip_dirs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<std::string> dirs;
  if (ec) return dirs;
  fs::path bin = exe.parent_path();
  // build/bin/kiln and build/kiln_*_test in the source tree; <prefix>/bin/kiln when installed.
  for (const fs::path& d : {bin / ".." / "data" / "chips", bin / ".." / ".." / "data" / "chips",
                            bin / ".." / "share" / "kiln" / "chips"})
    if (fs::is_directory(d, ec)) dirs.push_back(fs::weakly_canonical(d, ec).string());
  return dirs;
}

std::vector<std::string> shipped_chips(const std::vector<std::string>& dirs) {
  namespace fs = std::filesystem;
  std::set<std::string> names;
  std::error_code ec;
  for (const auto& d : dirs)
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().extension() == ".json") names.insert(e.path().stem().string());
  return {names.begin(), names.end()};
}

Chip resolve_chip(const std::string& spec, const std::vector<std::string>& dirs, const std::string& machine_cache) {
  namespace fs = std::filesystem;
  KILN_CHECK(!spec.empty(), "--chip: empty chip name");
  if (spec == "cpu")
    return chip_from_machine(load_or_measure_machine(machine_cache.empty() ? default_machine_cache_path() : machine_cache, false));
  if (fs::path(spec).extension() == ".json") return load_chip_file(spec);
  for (const auto& d : dirs) {
    fs::path p = fs::path(d) / (spec + ".json");
    if (fs::exists(p)) return load_chip_file(p.string());
  }
  std::string names = "cpu";
  for (const auto& n : shipped_chips(dirs)) names += ", " + n;
  throw Error(str_cat("--chip ", spec, ": unknown chip (known: ", names, "; or a FILE.json)"));
}

}  // namespace kiln::analysis
