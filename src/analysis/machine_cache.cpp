// `kiln machine`: the measurement as JSON (also the cache file's format), as text, and the
// cache itself (one measurement per file, re-measured when the key — CPU model and core
// count — no longer matches this machine, or another kiln build wrote it).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/analysis/machine.h"
#include "kiln/ir/error.h"
#include "kiln/plan/json.h"

namespace kiln::analysis {

std::string machine_to_json(const MachinePeaks& m) {
  json::Value j;
  j.set("cpu", m.cpu);
  j.set("cores", m.cores);
  json::Value& isa = j.set("isa", json::Array{});
  for (const auto& i : m.isa) isa.push(i);
  j.set("fma_kernel", m.fma_kernel);
  j.set("fp32_gflops_per_core", m.fp32_gflops_per_core);
  j.set("fp32_gflops_all_cores", m.fp32_gflops_all_cores);
  if (m.int8_gops_per_core) j.set("int8_gops_per_core", *m.int8_gops_per_core);
  if (m.int8_gops_all_cores) j.set("int8_gops_all_cores", *m.int8_gops_all_cores);
  if (!m.int8_kernel.empty()) j.set("int8_kernel", m.int8_kernel);
  if (m.bf16_gflops_per_core) j.set("bf16_gflops_per_core", *m.bf16_gflops_per_core);
  if (m.bf16_gflops_all_cores) j.set("bf16_gflops_all_cores", *m.bf16_gflops_all_cores);
  j.set("dram_gbs_one_core", m.dram_gbs_one_core);
  j.set("dram_gbs_all_cores", m.dram_gbs_all_cores);
  j.set("triad_array_bytes", m.triad_array_bytes);
  json::Value& caches = j.set("caches", json::Array{});
  for (const auto& c : m.caches) {
    json::Value& e = caches.push(json::Object{});
    e.set("level", c.level);
    e.set("cache_bytes", c.cache_bytes);
    e.set("working_set_bytes", c.working_set_bytes);
    e.set("gbs_one_core", c.gbs_one_core);
  }
  json::Value& kernels = j.set("kernels", json::Array{});
  for (const auto& k : m.kernels) {
    json::Value& e = kernels.push(json::Object{});
    e.set("name", k.name);
    e.set("shape", k.shape);
    e.set("gflops_one_core", k.gflops_one_core);
    e.set("gbs_one_core", k.gbs_one_core);
    e.set("seconds", k.seconds);
    e.set("planes", k.planes);
    e.set("rows", k.rows);
    e.set("cols", k.cols);
    e.set("vector_ops", k.vector_ops);
    e.set("bytes_written", k.bytes_written);
  }
  j.set("memory_bytes", m.memory_bytes);
  j.set("measure_seconds", m.measure_seconds);
  j.set("key", m.key);
  j.set("build", m.build);
  return j.dump() + "\n";
}

namespace {

const json::Value& field(const json::Value& obj, std::string_view key, json::Kind kind, const std::string& origin) {
  const json::Value* v = obj.find(key);
  KILN_CHECK(v != nullptr, origin, ": missing \"", key, "\"");
  KILN_CHECK(v->kind() == kind, origin, ": \"", key, "\" must be ", json::kind_name(kind), ", not ",
             json::kind_name(v->kind()));
  return *v;
}

double number(const json::Value& obj, std::string_view key, const std::string& origin) {
  return field(obj, key, json::Kind::number, origin).as_double(origin);
}

const std::string& string(const json::Value& obj, std::string_view key, const std::string& origin) {
  return field(obj, key, json::Kind::string, origin).as_string(origin);
}

std::optional<double> optional_number(const json::Value& obj, std::string_view key, const std::string& origin) {
  if (!obj.find(key)) return std::nullopt;
  return number(obj, key, origin);
}

}  // namespace

MachinePeaks machine_from_json(const std::string& text, const std::string& origin) {
  json::Value j = json::parse(text, origin);
  KILN_CHECK(j.is_object(), origin, ": expected a JSON object");
  MachinePeaks m;
  m.cpu = string(j, "cpu", origin);
  m.cores = static_cast<int>(number(j, "cores", origin));
  for (const auto& i : field(j, "isa", json::Kind::array, origin).as_array(origin)) {
    KILN_CHECK(i.is_string(), origin, ": \"isa\" must list strings");
    m.isa.push_back(i.as_string(origin));
  }
  m.fma_kernel = string(j, "fma_kernel", origin);
  m.fp32_gflops_per_core = number(j, "fp32_gflops_per_core", origin);
  m.fp32_gflops_all_cores = number(j, "fp32_gflops_all_cores", origin);
  m.int8_gops_per_core = optional_number(j, "int8_gops_per_core", origin);
  m.int8_gops_all_cores = optional_number(j, "int8_gops_all_cores", origin);
  if (const json::Value* k = j.find("int8_kernel"); k && k->is_string()) m.int8_kernel = k->as_string(origin);
  m.bf16_gflops_per_core = optional_number(j, "bf16_gflops_per_core", origin);
  m.bf16_gflops_all_cores = optional_number(j, "bf16_gflops_all_cores", origin);
  m.dram_gbs_one_core = number(j, "dram_gbs_one_core", origin);
  m.dram_gbs_all_cores = number(j, "dram_gbs_all_cores", origin);
  m.triad_array_bytes = static_cast<int64_t>(number(j, "triad_array_bytes", origin));
  for (const auto& c : field(j, "caches", json::Kind::array, origin).as_array(origin)) {
    KILN_CHECK(c.is_object(), origin, ": \"caches\" must list objects");
    m.caches.push_back({string(c, "level", origin),
                        static_cast<int64_t>(number(c, "cache_bytes", origin)),
                        static_cast<int64_t>(number(c, "working_set_bytes", origin)), number(c, "gbs_one_core", origin)});
  }
  if (const json::Value* ks = j.find("kernels")) {  // absent in caches written before kernel rates
    KILN_CHECK(ks->is_array(), origin, ": \"kernels\" must be an array");
    for (const auto& k : ks->as_array(origin)) {
      KILN_CHECK(k.is_object(), origin, ": \"kernels\" must list objects");
      KernelRate r{string(k, "name", origin),
                   string(k, "shape", origin),
                   number(k, "gflops_one_core", origin), number(k, "gbs_one_core", origin),
                   number(k, "seconds", origin), static_cast<int64_t>(number(k, "planes", origin))};
      r.rows = static_cast<int64_t>(optional_number(k, "rows", origin).value_or(0));
      r.cols = static_cast<int64_t>(optional_number(k, "cols", origin).value_or(0));
      r.vector_ops = static_cast<int64_t>(optional_number(k, "vector_ops", origin).value_or(0));
      r.bytes_written = optional_number(k, "bytes_written", origin).value_or(0);
      m.kernels.push_back(r);
    }
  }
  m.memory_bytes = static_cast<int64_t>(number(j, "memory_bytes", origin));
  m.measure_seconds = number(j, "measure_seconds", origin);
  m.key = string(j, "key", origin);
  if (j.find("build")) m.build = string(j, "build", origin);  // absent in caches written before it
  KILN_CHECK(m.cores > 0 && m.fp32_gflops_per_core > 0 && m.dram_gbs_one_core > 0, origin,
             ": cores, fp32_gflops_per_core and dram_gbs_one_core must be positive");
  return m;
}

std::string machine_to_text(const MachinePeaks& m) {
  std::ostringstream o;
  char buf[256];
  o << "cpu      " << m.cpu << ", " << m.cores << " core" << (m.cores == 1 ? "" : "s") << "\n";
  o << "isa     ";
  for (const auto& i : m.isa) o << " " << i;
  o << "\n\n";
  o << "                        one core    all cores\n";
  auto row = [&](const char* name, double one, double all, const char* unit) {
    std::snprintf(buf, sizeof buf, "%-24s %11.1f  %11.1f  %s\n", name, one, all, unit);
    o << buf;
  };
  row(("fp32 fma (" + m.fma_kernel + ")").c_str(), m.fp32_gflops_per_core, m.fp32_gflops_all_cores, "GFLOP/s");
  if (m.int8_gops_per_core)
    row(("int8 (" + (m.int8_kernel.empty() ? std::string("vnni") : m.int8_kernel) + ")").c_str(), *m.int8_gops_per_core,
        m.int8_gops_all_cores.value_or(0), "GOP/s");
  if (m.bf16_gflops_per_core) row("bf16 dot", *m.bf16_gflops_per_core, m.bf16_gflops_all_cores.value_or(0), "GFLOP/s");
  char label[64];
  std::snprintf(label, sizeof label, "dram triad (%lld MiB x3)", static_cast<long long>(m.triad_array_bytes >> 20));
  row(label, m.dram_gbs_one_core, m.dram_gbs_all_cores, "GB/s");
  for (const auto& c : m.caches) {
    std::snprintf(buf, sizeof buf, "%-3s read (%lld KiB) %11.1f  %11s  GB/s   (cache %lld KiB)\n", c.level.c_str(),
                  static_cast<long long>(c.working_set_bytes >> 10), c.gbs_one_core, "",
                  static_cast<long long>(c.cache_bytes >> 10));
    o << buf;
  }
  if (!m.kernels.empty()) o << "\nkiln kernels, one core:\n";
  for (const auto& k : m.kernels) {
    std::snprintf(buf, sizeof buf, "%-22s %8.1f GFLOP/s %8.1f GB/s   %s\n", k.name.c_str(), k.gflops_one_core,
                  k.gbs_one_core, k.shape.c_str());
    o << buf;
  }
  std::snprintf(buf, sizeof buf, "\nmemory %.1f GiB; measured in %.1f s\n", static_cast<double>(m.memory_bytes) / (1 << 30),
                m.measure_seconds);
  o << buf;
  return o.str();
}

std::string default_machine_cache_path() {
  namespace fs = std::filesystem;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) return (fs::path(xdg) / "kiln" / "machine.json").string();
  const char* home = std::getenv("HOME");
  KILN_CHECK(home && *home, "kiln machine: HOME is not set (give --cache FILE)");
  return (fs::path(home) / ".cache" / "kiln" / "machine.json").string();
}

MachinePeaks load_or_measure_machine(const std::string& path, bool refresh, bool* measured,
                                     const MeasureOptions& opt, bool* cached) {
  namespace fs = std::filesystem;
  const MachinePeaks here = describe_machine();
  if (!refresh) {
    std::ifstream in(path, std::ios::binary);
    if (in.good()) {
      std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      try {
        MachinePeaks from_file = machine_from_json(text, path);
        // A cache without every calibration the perf model reads (one written before they
        // were added) is re-measured once.
        bool complete = std::all_of(kernel_rate_names().begin(), kernel_rate_names().end(),
                                    [&](const std::string& name) { return from_file.kernel(name) != nullptr; });
        // Another CPU, or another kiln build (its kernels may have changed): measure again.
        if (from_file.key == here.key && from_file.build == here.build && complete) {
          if (measured) *measured = false;
          if (cached) *cached = true;
          return from_file;
        }
      } catch (const Error&) {
        // A damaged or older-format cache is only a cache: measure again and replace it.
      }
    }
  }
  MachinePeaks m = measure_machine(opt);
  if (measured) *measured = true;
  if (m.cpu_share < opt.min_cpu_share) {
    MachinePeaks again = measure_machine(opt);
    if (again.fp32_gflops_per_core > m.fp32_gflops_per_core) m = std::move(again);
    if (m.cpu_share < opt.min_cpu_share) {  // contention_warning says so; not cached
      if (cached) *cached = false;
      return m;
    }
  }
  std::error_code ec;
  if (fs::path(path).has_parent_path()) fs::create_directories(fs::path(path).parent_path(), ec);
  // Per-process temporary name: concurrent kiln processes may re-measure at the same time.
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary);
    out << machine_to_json(m);
    KILN_CHECK(out.good(), path, ": cannot write the machine cache");
  }
  KILN_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, path, ": cannot write the machine cache");
  if (cached) *cached = true;
  return m;
}

}  // namespace kiln::analysis
