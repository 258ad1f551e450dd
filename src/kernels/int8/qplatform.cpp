// The INT8 kernel tables, chosen once from CPUID: scalar, upgraded to AVX2 (widening), then
// AVX-VNNI, then AVX-512 VNNI as the CPU (and the OS's saved register state) allow.
#include "kiln/kernels/int8.h"
#include "isa_gate.h"
#include "qconv_internal.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace kiln::kernels::int8 {

QKernels make_scalar_qkernels();
#if defined(__x86_64__)
QKernels make_avx2_qkernels();
QKernels make_avxvnni_qkernels();
QKernels make_avx512vnni_qkernels();
QKernels make_avx2_narrow_qkernels();
#endif

namespace {

#if defined(__x86_64__)
// AVX-VNNI (the VEX-encoded vpdpbusd): CPUID leaf 7, sub-leaf 1, EAX bit 4. Asked directly
// because clang 14's __builtin_cpu_supports does not know the "avxvnni" name.
bool cpu_has_avxvnni() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax >> 4) & 1u;
}
#endif

bool cpu_has(QIsa isa) {
  if (!kSimdKernelsAllowed) return isa == QIsa::Scalar;
#if defined(__x86_64__)
  switch (isa) {
    case QIsa::Scalar: return true;
    case QIsa::Avx2: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case QIsa::AvxVnni: return cpu_has_avxvnni() && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case QIsa::Avx512Vnni:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma");
  }
  return false;
#else
  return isa == QIsa::Scalar;
#endif
}

struct Tables {
  QKernels table[4];
  bool has[4] = {};
  const QKernels* best = nullptr;
  QKernels narrow;                    // AVX2 best: the vpmaddubsw kernels for 7-bit s8 operands
  const QKernels* narrow_or_null = nullptr;
  Tables() {
    table[0] = make_scalar_qkernels();
    has[0] = true;
    best = &table[0];
#if defined(__x86_64__)
    QKernels (*make[4])() = {nullptr, make_avx2_qkernels, make_avxvnni_qkernels, make_avx512vnni_qkernels};
    for (int i = 1; i < 4; ++i)
      if ((has[i] = cpu_has(static_cast<QIsa>(i)))) {
        table[i] = make[i]();
        best = &table[i];
      }
    // Every table past scalar runs depthwise convolutions on the AVX2 channel-blocked kernel.
    if (cpu_has(QIsa::Avx2))
      for (int i = 1; i < 4; ++i)
        if (has[i]) table[i].depthwise_block = detail::qdepthwise_block_avx2;
    if (best->isa == QIsa::Avx2) {
      narrow = make_avx2_narrow_qkernels();
      narrow.depthwise_block = detail::qdepthwise_block_avx2;
      narrow_or_null = &narrow;
    }
#endif
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const char* qisa_name(QIsa isa) {
  switch (isa) {
    case QIsa::Scalar: return "scalar";
    case QIsa::Avx2: return "avx2";
    case QIsa::AvxVnni: return "avx-vnni";
    case QIsa::Avx512Vnni: return "avx512-vnni";
  }
  return "?";
}

const QKernels& qkernels() { return *tables().best; }

const QKernels& qkernels_for_signed(const int8_t* s8, int64_t n) {
  const Tables& t = tables();
  if (!t.narrow_or_null) return *t.best;
  for (int64_t i = 0; i < n; ++i)
    if (s8[i] < -64 || s8[i] > 64) return *t.best;
  return *t.narrow_or_null;
}

void lookup_bytes(const uint8_t* x, const uint8_t* table, uint8_t* y, int64_t n) {
#if defined(__x86_64__)
  if (tables().has[static_cast<int>(QIsa::Avx2)]) return detail::lookup_bytes_avx2(x, table, y, n);
#endif
  for (int64_t i = 0; i < n; ++i) y[i] = table[x[i]];
}

const QKernels* qkernels_for(QIsa isa) {
  const Tables& t = tables();
  int i = static_cast<int>(isa);
  return t.has[i] ? &t.table[i] : nullptr;
}

}  // namespace kiln::kernels::int8
