// What this build and this CPU are: the version written into manifests and the ISA check.
#include "kiln/ir/error.h"
#include "kiln/runtime/artifact.h"

#ifndef KILN_VERSION
#define KILN_VERSION "unknown"
#endif

namespace kiln {

std::string_view kiln_version() { return KILN_VERSION; }

namespace {

bool has_avx512() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#else
  return false;
#endif
}

bool has_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace

std::string_view host_isa() {
  if (has_avx512()) return "avx512";
  if (has_avx2()) return "avx2";
  return "scalar";
}

namespace {
// ISAs in order of what they need: code for one runs on every CPU that has a later one.
int isa_rank(std::string_view isa) {
  if (isa == "scalar") return 0;
  if (isa == "avx2") return 1;
  if (isa == "avx512") return 2;
  throw Error(str_cat("unknown target ISA '", isa, "' (known: avx512, avx2, scalar)"));
}
}  // namespace

bool isa_runs_on(std::string_view built_for, std::string_view cpu) { return isa_rank(built_for) <= isa_rank(cpu); }

bool host_supports_isa(std::string_view isa) { return isa_runs_on(isa, host_isa()); }

void check_artifact_isa(const std::string& path, std::string_view built_for, std::string_view cpu) {
  KILN_CHECK(isa_runs_on(built_for, cpu), path, ": built for ", built_for, ", but this CPU supports only ", cpu,
             "; compile the model on (or for) this machine");
}

}  // namespace kiln
