// The loops `kiln machine` times. Each is compiled for one ISA through a function target
// attribute (so the library itself needs no ISA flags) and is only called when the CPU has
// that ISA. Compute loops keep kAccumulators independent chains in registers, more than
// FMA latency x ports on current cores, so the loop runs at the issue rate, not the latency.
#pragma once
#include <cstdint>

namespace kiln::analysis::machine_kernels {

constexpr int kAccumulators = 12;

// Each returns the operations it performed (flops, or int ops for int8) over `iters`
// iterations of kAccumulators vector instructions.
double fma_f32_avx512(int64_t iters);
double fma_f32_avx2(int64_t iters);
double fma_f32_scalar(int64_t iters);
double dot_u8s8_avx512vnni(int64_t iters);  // vpdpbusd zmm: 64 MACs per instruction
double dot_u8s8_avxvnni(int64_t iters);     // vpdpbusd ymm (AVX-VNNI): 32 MACs
double dot_u8s8_avx2(int64_t iters);        // vpmaddubsw + vpmaddwd + vpaddd (AVX2): 32 MACs per three
double dot_bf16_avx512(int64_t iters);      // vdpbf16ps zmm: 32 MACs per instruction

enum class VectorIsa { avx512, avx2, scalar };

// a[i] = b[i] + s * c[i] for i in [begin, end) (doubles). Returns bytes moved by STREAM's
// count: 24 per element (two reads, one write; write-allocate traffic not counted).
double triad(VectorIsa isa, double* a, const double* b, const double* c, double s, int64_t begin, int64_t end);

// Reads n floats `passes` times, summing; returns bytes read.
double read_sum(VectorIsa isa, const float* p, int64_t n, int64_t passes);

}  // namespace kiln::analysis::machine_kernels
