// Shared pieces of the kernel tests: every kernel table this CPU can run, random data, the
// naive epilogue every fast path is compared with.
#pragma once
#include <chrono>
#include <cmath>
#include <random>
#include <thread>
#include <string>
#include <vector>

#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/epilogue.h"
#include "kiln/kernels/parallel.h"

namespace kiln::kernels::test {

// Scalar always; AVX2 and AVX-512 when this CPU has them (all three on the project machine).
inline std::vector<const KernelTable*> all_tables() {
  std::vector<const KernelTable*> out;
  for (Isa isa : {Isa::Scalar, Isa::Avx2, Isa::Avx512})
    if (const KernelTable* t = kernel_table_for(isa)) out.push_back(t);
  return out;
}

// Teaches the pool that pool worker 1 runs parallel_shares regions of `key` three times slower
// than the caller (it spins three times as long per index), so that the next region of that
// key on two threads gives the caller about three quarters of the indices: for tests that a
// kernel's output does not depend on its cut.
inline void skew_shares(const void* key) {
  const auto caller = std::this_thread::get_id();
  for (int i = 0; i < 30; ++i)
    parallel_shares(
        40, 2,
        [&](int64_t b, int64_t e) {
          const auto until = std::chrono::steady_clock::now() +
                             std::chrono::microseconds((std::this_thread::get_id() == caller ? 5 : 15) * (e - b));
          while (std::chrono::steady_clock::now() < until) {
          }
        },
        key);
}

inline std::vector<float> random_vec(size_t n, unsigned seed, float lo = -1.f, float hi = 1.f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = u(rng);
  return v;
}

// The activation in double precision with std:: functions.
inline double ref_act(Act a, double x, double al, double be) {
  switch (a) {
    case Act::None: return x;
    case Act::Relu: return x > 0 ? x : 0;
    case Act::LeakyRelu: return x >= 0 ? x : al * x;
    case Act::Clip: return std::min(std::max(x, al), be);
    case Act::Sigmoid: return 1 / (1 + std::exp(-x));
    case Act::Tanh: return std::tanh(x);
    case Act::Silu: return x / (1 + std::exp(-x));
    case Act::HardSigmoid: return std::min(1.0, std::max(0.0, al * x + be));
    case Act::HardSwish: return x * std::min(1.0, std::max(0.0, x / 6 + 0.5));
    case Act::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    case Act::GeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
  }
  return x;
}

constexpr Act kAllActs[] = {Act::None,    Act::Relu,        Act::LeakyRelu, Act::Clip, Act::Sigmoid,  Act::Tanh,
                            Act::Silu,    Act::HardSigmoid, Act::HardSwish, Act::Gelu, Act::GeluTanh};

inline const char* act_label(Act a) {
  static const char* names[] = {"None", "Relu",        "LeakyRelu", "Clip", "Sigmoid", "Tanh",
                                "Silu", "HardSigmoid", "HardSwish", "Gelu", "GeluTanh"};
  return names[static_cast<int>(a)];
}

// Parameters that make each activation non-trivial on inputs in about [-3, 3].
inline void act_params(Act a, float& al, float& be) {
  al = 0.f, be = 0.f;
  if (a == Act::LeakyRelu) al = 0.1f;
  if (a == Act::Clip) al = -0.5f, be = 0.7f;
  if (a == Act::HardSigmoid) al = 0.2f, be = 0.5f;
}

// epilogue applied to one accumulated value (double), as the kernels define it.
inline double ref_epilogue(const Epilogue& e, double acc, int64_t i, int64_t j) {
  double v = acc * e.alpha;
  if (e.bias) v += e.bias[e.bias_per_row ? i : j];
  if (e.residual) v += e.residual[i * e.ldr + j];
  return ref_act(e.act, v, e.act_alpha, e.act_beta);
}

}  // namespace kiln::kernels::test
