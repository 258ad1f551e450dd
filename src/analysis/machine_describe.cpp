// What this machine is: CPU name, physical cores we may run on, ISA, cache sizes, memory.
#include <cpuid.h>
#include <sched.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "kiln/analysis/machine.h"
#include "kiln/ir/build_identity.h"
#include "machine_internal.h"

namespace kiln::analysis {
namespace {

std::string trim(std::string s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\n");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string cpu_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) return trim(line.substr(line.find(':') + 1));
  unsigned regs[12] = {};
  if (__get_cpuid(0x80000002, &regs[0], &regs[1], &regs[2], &regs[3]) &&
      __get_cpuid(0x80000003, &regs[4], &regs[5], &regs[6], &regs[7]) &&
      __get_cpuid(0x80000004, &regs[8], &regs[9], &regs[10], &regs[11]))
    return trim(std::string(reinterpret_cast<const char*>(regs), sizeof regs).c_str());
  return "unknown CPU";
}

int read_int_file(const std::string& path, int dflt) {
  std::ifstream in(path);
  int v = dflt;
  if (!(in >> v)) return dflt;
  return v;
}

int64_t memory_bytes() {
  long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : 0;
}

}  // namespace

std::vector<int> one_cpu_per_core() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> allowed;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) allowed.push_back(c);
  }
  if (allowed.empty()) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (int c = 0; c < (n > 0 ? n : 1); ++c) allowed.push_back(c);
  }
  // SMT siblings share a core's FMA units and caches: keep the first logical CPU of each core.
  std::set<std::pair<int, int>> seen;
  std::vector<int> out;
  for (int c : allowed) {
    std::string topo = "/sys/devices/system/cpu/cpu" + std::to_string(c) + "/topology/";
    std::pair<int, int> core{read_int_file(topo + "physical_package_id", 0), read_int_file(topo + "core_id", c)};
    if (seen.insert(core).second) out.push_back(c);
  }
  return out;
}

CpuFeatures cpu_features() {
  __builtin_cpu_init();
  CpuFeatures f;
  f.avx2 = __builtin_cpu_supports("avx2");
  f.fma = __builtin_cpu_supports("fma");
  f.avx512f = __builtin_cpu_supports("avx512f");
  f.avx512bw = __builtin_cpu_supports("avx512bw");
  f.avx512_vnni = __builtin_cpu_supports("avx512vnni");
  f.avx512_bf16 = __builtin_cpu_supports("avx512bf16");
  f.avx_vnni = __builtin_cpu_supports("avxvnni");
  return f;
}

std::vector<std::string> CpuFeatures::names() const {
  std::vector<std::string> out;
  if (avx2) out.push_back("avx2");
  if (fma) out.push_back("fma");
  if (avx_vnni) out.push_back("avx_vnni");
  if (avx512f) out.push_back("avx512f");
  if (avx512bw) out.push_back("avx512bw");
  if (avx512_vnni) out.push_back("avx512_vnni");
  if (avx512_bf16) out.push_back("avx512_bf16");
  return out;
}

MachinePeaks describe_machine() {
  MachinePeaks m;
  m.cpu = cpu_name();
  m.cores = static_cast<int>(one_cpu_per_core().size());
  CpuFeatures f = cpu_features();
  m.isa = f.names();
  m.fma_kernel = f.avx512f ? "avx512" : (f.avx2 && f.fma) ? "avx2" : "scalar";
  m.memory_bytes = memory_bytes();
  const std::pair<const char*, int> levels[] = {
      {"L1", _SC_LEVEL1_DCACHE_SIZE}, {"L2", _SC_LEVEL2_CACHE_SIZE}, {"L3", _SC_LEVEL3_CACHE_SIZE}};
  for (const auto& [name, conf] : levels) {
    long bytes = sysconf(conf);
    if (bytes > 0) m.caches.push_back({name, bytes, 0, 0});
  }
  std::ostringstream key;
  key << m.cpu << " x" << m.cores;
  m.key = key.str();
  m.build = build_identity();
  return m;
}

}  // namespace kiln::analysis
