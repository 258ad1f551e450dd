// The kernel table, chosen once from CPU features: the scalar baseline, upgraded to AVX2+FMA,
// then to AVX-512 when CPUID (and the OS's saved register state) allow.

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>

#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/kernels/parallel.h"
#include "isa_gate.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kiln::kernels {

KernelTable make_scalar_table();
#if defined(__x86_64__)
KernelTable make_avx2_table();
KernelTable make_avx512_table();
#endif

namespace {

bool cpu_has(Isa isa) {
  if (!kSimdKernelsAllowed) return isa == Isa::Scalar;
#if defined(__x86_64__)
  // __builtin_cpu_supports also checks XCR0, i.e. that the OS saves ymm/zmm state.
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case Isa::Avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("fma");
  }
  return false;
#else
  return isa == Isa::Scalar;
#endif
}

struct Tables {
  KernelTable scalar, avx2, avx512;
  bool has_avx2 = false, has_avx512 = false;
  const KernelTable* best = nullptr;
  Tables() {
    scalar = make_scalar_table();
    best = &scalar;
#if defined(__x86_64__)
    if ((has_avx2 = cpu_has(Isa::Avx2))) {
      avx2 = make_avx2_table();
      best = &avx2;
    }
    if ((has_avx512 = cpu_has(Isa::Avx512))) {
      avx512 = make_avx512_table();
      best = &avx512;
    }
#endif
  }
};

const Tables& tables() {
  static const Tables t;  // function-local static: built once, thread-safe, usable in static init
  return t;
}

// CPUID's PRFCHW bit (leaf 0x80000001, ECX bit 8): clang's __builtin_cpu_supports has no name
// for it.
bool cpu_has_prefetchw() {
#if defined(__x86_64__)
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(0x80000001u, &a, &b, &c, &d) && (c & (1u << 8)) != 0;
  }();
  return kSimdKernelsAllowed && has;
#else
  return false;
#endif
}

// CPUID's ERMS bit (leaf 7, EBX bit 9): string stores that move whole lines.
bool cpu_has_erms() {
#if defined(__x86_64__)
  static const bool has = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 9)) != 0;
  }();
  return kSimdKernelsAllowed && has;
#else
  return false;
#endif
}

// Off / On / Auto as the environment variable says "0" / "1" / anything else (or nothing).
template <class Mode>
Mode mode_from_env(const char* name) {
  const char* env = std::getenv(name);
  if (env && std::strcmp(env, "0") == 0) return Mode::Off;
  if (env && std::strcmp(env, "1") == 0) return Mode::On;
  return Mode::Auto;
}

std::atomic<ClaimOutput>& claim_output_mode() {
  static std::atomic<ClaimOutput> mode{mode_from_env<ClaimOutput>("KILN_CLAIM_OUTPUT")};
  return mode;
}

std::atomic<ExpandBands>& expand_bands_mode() {
  static std::atomic<ExpandBands> mode{mode_from_env<ExpandBands>("KILN_EXPAND_BANDS")};
  return mode;
}

std::atomic<WritePrefetch>& write_prefetch_mode() {
  static std::atomic<WritePrefetch> mode{mode_from_env<WritePrefetch>("KILN_WRITE_PREFETCH")};
  return mode;
}
// How often Auto mode measures the cores' distance, and how soon it tries again after finding
// no worker to measure against.
constexpr std::chrono::nanoseconds kMeasureEvery = std::chrono::milliseconds(50), kRetryAfter = std::chrono::milliseconds(5);
std::atomic<bool> g_far_cores{false};
std::atomic<int64_t> g_far_cores_measured_ns{INT64_MIN / 2};

}  // namespace

int cpu_amd_family() {
#if defined(__x86_64__)
  static const int family = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(0, &a, &b, &c, &d)) return 0;
    // "AuthenticAMD" in EBX, EDX, ECX.
    if (b != 0x68747541u || d != 0x69746e65u || c != 0x444d4163u) return 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
    const unsigned base = (a >> 8) & 0xfu, ext = (a >> 20) & 0xffu;
    return static_cast<int>(base == 0xfu ? base + ext : base);
  }();
  return family;
#else
  return 0;
#endif
}

bool cpu_fma512_double_pumped() { return kSimdKernelsAllowed && cpu_amd_family() == 0x19; }

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::Scalar: return "scalar";
    case Isa::Avx2: return "avx2";
    case Isa::Avx512: return "avx512";
  }
  return "?";
}

const KernelTable& kernel_table() { return *tables().best; }

const KernelTable* kernel_table_for(Isa isa) {
  const Tables& t = tables();
  switch (isa) {
    case Isa::Scalar: return &t.scalar;
    case Isa::Avx2: return t.has_avx2 ? &t.avx2 : nullptr;
    case Isa::Avx512: return t.has_avx512 ? &t.avx512 : nullptr;
  }
  return nullptr;
}

std::string_view gemm_isa() { return isa_name(kernel_table().isa); }

size_t attention_scratch_floats(int64_t rows, int64_t D, int64_t Dv) {
  // Kᵀ block, the scores of one group of up to 8 rows, running outputs, max and sum.
  return static_cast<size_t>(D * kAttentionKeyBlock + 8 * kAttentionKeyBlock + rows * Dv + 2 * rows);
}

bool write_prefetch_pays(int threads) {
  if (threads <= 1 || !cpu_has_prefetchw()) return false;
  switch (write_prefetch_mode().load(std::memory_order_relaxed)) {
    case WritePrefetch::On: return true;
    case WritePrefetch::Off: return false;
    case WritePrefetch::Auto: return g_far_cores.load(std::memory_order_relaxed);
  }
  return false;
}

void set_write_prefetch(WritePrefetch mode) { write_prefetch_mode().store(mode); }

bool claim_output_pays(int threads) {
  switch (claim_output_mode().load(std::memory_order_relaxed)) {
    case ClaimOutput::On: return true;
    case ClaimOutput::Off: return false;
    case ClaimOutput::Auto: return threads > 1 && cpu_has_erms() && g_far_cores.load(std::memory_order_relaxed);
  }
  return false;
}

void set_claim_output(ClaimOutput mode) { claim_output_mode().store(mode); }

bool expand_bands_pay(int threads) {
  switch (expand_bands_mode().load(std::memory_order_relaxed)) {
    case ExpandBands::On: return true;
    case ExpandBands::Off: return false;
    case ExpandBands::Auto: return threads > 1 && g_far_cores.load(std::memory_order_relaxed);
  }
  return false;
}

bool depthwise_project_bands_pay(int64_t bands, int64_t out_rows, int threads) {
  if (expand_bands_pay(threads)) return true;  // pinned on, or far cores
  // Auto with the cores close: one band per thread of enough rows.
  return expand_bands_mode().load(std::memory_order_relaxed) == ExpandBands::Auto && threads > 1 &&
         bands == threads && out_rows >= kCloseBandMinRows * threads;
}

bool expand_depthwise_bands_pay(int64_t expanded_bytes, int threads) {
  if (expand_bands_pay(threads)) return true;  // pinned on, or far cores
  // Auto with the cores close: an expanded tensor larger than the threads' L2s.
  return expand_bands_mode().load(std::memory_order_relaxed) == ExpandBands::Auto && threads > 1 &&
         expanded_bytes > kCloseExpandBytesPerThread * threads;
}

void set_expand_bands(ExpandBands mode) { expand_bands_mode().store(mode); }

bool claim_for_write(void* p, int64_t bytes) {
  if (bytes < kMinClaimBytes) return false;
#if defined(__x86_64__)
  if (cpu_has_erms()) {
    size_t count = static_cast<size_t>(bytes);
    asm volatile("rep stosb" : "+D"(p), "+c"(count) : "a"(0) : "memory");
    return true;
  }
#endif
  std::memset(p, 0, static_cast<size_t>(bytes));
  return true;
}

void refresh_core_distance(int threads) {
  const bool prefetch_asks = cpu_has_prefetchw() && write_prefetch_mode().load() == WritePrefetch::Auto;
  const bool claim_asks = cpu_has_erms() && claim_output_mode().load() == ClaimOutput::Auto;
  const bool bands_ask = expand_bands_mode().load() == ExpandBands::Auto;
  if (threads <= 1 || !(prefetch_asks || claim_asks || bands_ask)) return;
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  int64_t last = g_far_cores_measured_ns.load();
  // One caller measures per kMeasureEvery; the others keep the last answer.
  if (now - last < kMeasureEvery.count() || !g_far_cores_measured_ns.compare_exchange_strong(last, now)) return;
  const double round_trip = core_round_trip_ns();
  if (round_trip > 0) g_far_cores.store(round_trip > kFarCoresNs);
  else g_far_cores_measured_ns.store(now - (kMeasureEvery - kRetryAfter).count());  // the worker was not there
}

}  // namespace kiln::kernels
