// Vectorised exp / tanh / erf and the activations, written once over the ISA's vector type V.
// Included inside an ISA namespace (kiln::kernels::avx512, ...) by that ISA's .cpp, which is
// compiled with that ISA's flags, so each ISA gets its own copy and no symbol is shared.
//
// Accuracy (float inputs, measured in tests/kernels/test_vecmath.cpp against std::):
//   exp_v    relative error <= 2.6e-7 on [-87.33, 88.37] (AVX-512's exp_table32: 4.5e-7, as
//            e^-x for sigmoid and SiLU); inputs below -87.33
//            give e^-87.33 (1.18e-38, the bottom of the normal range: no denormals, and not
//            0), inputs above 88.37 give e^88.37; NaN stays NaN (x86).
//   tanh_v   |x| < 0.55: odd Taylor polynomial to x^17 (truncation < 1e-8 relative);
//            else 1 - 2/(exp(2|x|) + 1). Max relative error <= 1e-6.
//   erf_v    Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7 (absolute) plus float rounding.

// e^r on |r| <= ln2/2 (NEG: e^-r): a degree-5 polynomial fitted for least relative error
// (Lawson's iteration; 7.5e-8 before float rounding, as close as Taylor to r^6 with one FMA
// fewer). For e^-r the odd terms change sign.
template <bool NEG>
inline V exp_reduced(V r) {
  constexpr float s = NEG ? -1.f : 1.f;
  V p = V::set1(s * 0.008297654800117016f);
  p = fma(p, r, V::set1(0.04191538318991661f));
  p = fma(p, r, V::set1(s * 0.16667574644088745f));
  p = fma(p, r, V::set1(0.49998894333839417f));
  p = fma(p, r, V::set1(s * 0.9999997019767761f));
  return fma(p, r, V::set1(1.0000001192092896f));
}

// 2^(j/32) for j = 0..31, rounded to float (exp_table32).
alignas(64) inline constexpr float kExp2Fractions32[32] = {
    0x1.0p+0f,     0x1.059b0ep+0f, 0x1.0b5586p+0f, 0x1.11301ep+0f, 0x1.172b84p+0f, 0x1.1d4874p+0f, 0x1.2387a6p+0f,
    0x1.29e9ep+0f, 0x1.306fep+0f,  0x1.371a74p+0f, 0x1.3dea64p+0f, 0x1.44e086p+0f, 0x1.4bfdaep+0f, 0x1.5342b6p+0f,
    0x1.5ab07ep+0f, 0x1.6247ecp+0f, 0x1.6a09e6p+0f, 0x1.71f75ep+0f, 0x1.7a1148p+0f, 0x1.82589ap+0f, 0x1.8ace54p+0f,
    0x1.93737cp+0f, 0x1.9c4918p+0f, 0x1.a5503cp+0f, 0x1.ae89fap+0f, 0x1.b7f77p+0f,  0x1.c199bep+0f, 0x1.cb720ep+0f,
    0x1.d5818ep+0f, 0x1.dfc974p+0f, 0x1.ea4afap+0f, 0x1.f50766p+0f};

// e^x (NEG: e^-x) = 2^(k/32)·e^r with k = round(±32·x/ln2), |r| <= ln2/64, where the ISA can
// look up 32 floats in registers (VV::kLookup32, AVX-512's two-register permute): 2^(k/32) is the
// table's 2^((k & 31)/32) with k >> 5 added to its exponent, and e^r a degree-2 polynomial fitted
// for least relative error (5.3e-8 before float rounding; its odd term changes sign for e^-r as
// in exp_reduced). It is the shorter dependency chain that counts: SiLU is bound by how many of
// its operations the FP schedulers hold in flight, not by a port (on Zen 4 SiLU went 0.188 ->
// 0.159 ns an element, where a degree-4 polynomial in exp_neg_v's form gave 0.168 and Estrin's
// scheme for the degree 5 0.200). The argument is clamped as in exp_v (exp_neg_v: negated), so
// that k >> 5 stays within [-126, 127] and 2^(k >> 5) is a normal float.
template <bool NEG, class VV>
[[gnu::always_inline]] inline VV exp_table32(VV x) {
  constexpr float s = NEG ? -1.f : 1.f;
  const VV magic = VV::set1(12582912.f);  // 1.5·2^23: t's low bits are k
  VV xc = NEG ? min(VV::set1(87.33f), max(VV::set1(-88.3762626647949f), x))
              : min(VV::set1(88.3762626647949f), max(VV::set1(-87.33f), x));
  VV t = fma(xc, VV::set1(s * 32.f * 1.44269504088896341f), magic);
  VV k = t - magic;
  VV r = fma(k, VV::set1(-s * 0.693147180559945f / 32), xc);  // e^x: x - k·ln2/32; e^-x: its negation
  VV p = fma(fma(VV::set1(0.4999963343143463f), r, VV::set1(s * 1.0000146627426147f)), r, VV::set1(1.f));
  return scale_by_exponent_bits32(VV::lookup32(kExp2Fractions32, t), t) * p;
}

// e^x = 2^n·e^r with n = round(x / ln2). The argument is clamped to where the result is a
// normal float, with no compare and blend for the ends (that and the degree-5 polynomial:
// SiLU on it 0.285 -> 0.219 ns an element on Zen 4). lo is a hair above ln(FLT_MIN) so that
// 2^n·e^r stays normal. max(lo, x) before min(hi, ...): on x86 a NaN x passes through both
// (they return the second operand when one is NaN).
// AVX-512 takes exp_table32 instead.
template <class VV = V>
inline VV exp_v(VV x) {
  if constexpr (VV::kLookup32) {
    return exp_table32<false>(x);
  } else {
    const VV hi = VV::set1(88.3762626647949f), lo = VV::set1(-87.33f);
    VV xc = min(hi, max(lo, x));
    // x / ln2 + 127 + 1.5·2^23 rounds to an integer in float (ties to even), so t - magic is n
    // and t's low mantissa bits are n + 127, the biased exponent of 2^n (exponent_bits).
    const VV magic = VV::set1(12583039.f);  // 1.5·2^23 + 127
    VV t = fma(xc, VV::set1(1.44269504088896341f), magic);
    VV n = t - magic;
    // r = x - n·ln2 in two pieces so r keeps full precision.
    VV r = fma(n, VV::set1(-0.693359375f), xc);
    r = fma(n, VV::set1(2.12194440e-4f), r);
    return exp_reduced<false>(r) * exponent_bits(t);
  }
}

// e^-x for the logistic functions: exp_v's steps with the negation folded into the constants
// (r' = x + n·ln2 = -r, so the polynomial is exp_reduced's for e^-r') and, with a fused FMA,
// n·ln2 in one piece: ln2's float rounding (1.9e-9) then puts n·1.9e-9 into r, 5.5e-8
// relative at |x| = 20 and 2.4e-7 at the ends of the range, where sigmoid is about e^x.
// SiLU 0.219 -> 0.193 ns an element on Zen 4 (the one-piece step is the gain). AVX-512 takes
// exp_table32<true> instead.
template <class VV = V>
inline VV exp_neg_v(VV x) {
  if constexpr (VV::kLookup32) {
    return exp_table32<true>(x);
  } else {
    const VV magic = VV::set1(12583039.f);  // 1.5·2^23 + 127, as in exp_v
    VV xc = min(VV::set1(87.33f), max(VV::set1(-88.3762626647949f), x));
    VV t = fma(xc, VV::set1(-1.44269504088896341f), magic);
    VV n = t - magic;
    VV r;
    if constexpr (VV::kFusedFma) {
      r = fma(n, VV::set1(0.693147180559945f), xc);
    } else {  // n·ln2 rounded on its own would cancel against x: exp_v's two pieces
      r = fma(n, VV::set1(0.693359375f), xc);
      r = fma(n, VV::set1(-2.12194440e-4f), r);
    }
    return exp_reduced<true>(r) * exponent_bits(t);
  }
}

inline V sigmoid_v(V x) { return V::set1(1.f) / (V::set1(1.f) + exp_neg_v(x)); }

inline V tanh_v(V x) {
  V ax = abs(x);
  // Small |x|: x + x^3·P(x^2), the Taylor series of tanh (no cancellation near 0).
  V x2 = x * x;
  V p = V::set1(6404582.f / 10854718875.f);
  p = fma(p, x2, V::set1(-929569.f / 638512875.f));
  p = fma(p, x2, V::set1(21844.f / 6081075.f));
  p = fma(p, x2, V::set1(-1382.f / 155925.f));
  p = fma(p, x2, V::set1(62.f / 2835.f));
  p = fma(p, x2, V::set1(-17.f / 315.f));
  p = fma(p, x2, V::set1(2.f / 15.f));
  p = fma(p, x2, V::set1(-1.f / 3.f));
  V small = fma(p * x2, x, x);
  // Larger |x|: 1 - 2/(e^{2|x|} + 1), sign restored.
  V big = V::set1(1.f) - V::set1(2.f) / (exp_v(ax + ax) + V::set1(1.f));
  return select_lt(ax, V::set1(0.55f), small, copysign(big, x));
}

inline V erf_v(V x) {
  V ax = abs(x);
  V t = V::set1(1.f) / fma(V::set1(0.3275911f), ax, V::set1(1.f));
  V p = V::set1(1.061405429f);
  p = fma(p, t, V::set1(-1.453152027f));
  p = fma(p, t, V::set1(1.421413741f));
  p = fma(p, t, V::set1(-0.284496736f));
  p = fma(p, t, V::set1(0.254829592f));
  p = p * t;
  V y = V::set1(1.f) - p * exp_v(V::zero() - ax * ax);
  return copysign(y, x);
}

// act(x) for one activation, chosen at compile time so the epilogue loop has no switch.
template <Act A>
inline V activate(V x, V a, V b) {
  if constexpr (A == Act::None) {
    return x;
  } else if constexpr (A == Act::Relu) {
    return max(x, V::zero());
  } else if constexpr (A == Act::LeakyRelu) {
    return fma(a, min(x, V::zero()), max(x, V::zero()));
  } else if constexpr (A == Act::Clip) {
    return min(max(x, a), b);
  } else if constexpr (A == Act::Sigmoid) {
    return sigmoid_v(x);
  } else if constexpr (A == Act::Tanh) {
    return tanh_v(x);
  } else if constexpr (A == Act::Silu) {
    return x / (V::set1(1.f) + exp_neg_v(x));  // x·sigmoid(x) with one rounding fewer
  } else if constexpr (A == Act::HardSigmoid) {
    return min(max(fma(a, x, b), V::zero()), V::set1(1.f));
  } else if constexpr (A == Act::HardSwish) {
    return x * min(max(fma(V::set1(1.f / 6), x, V::set1(0.5f)), V::zero()), V::set1(1.f));
  } else if constexpr (A == Act::Gelu) {
    return V::set1(0.5f) * x * (V::set1(1.f) + erf_v(x * V::set1(0.70710678118654752f)));
  } else {  // GeluTanh
    V inner = V::set1(0.7978845608028654f) * fma(V::set1(0.044715f) * x, x * x, x);
    return V::set1(0.5f) * x * (V::set1(1.f) + tanh_v(inner));
  }
}

// One vector of an epilogue before its activation: x·alpha (when scaling) + the row's bias +
// the column bias + the residual, in this order (the GEMM micro-kernels' in-register epilogue
// and epilogue_rows share it, so both round the same). n < W: a partial vector.
inline V epilogue_sum(V x, bool scale, V alpha, V row_bias, const float* col_bias, const float* res, int n) {
  const bool full = n == V::W;
  if (scale) x = x * alpha;
  x = x + row_bias;
  if (col_bias) x = x + (full ? V::load(col_bias) : V::load_first(col_bias, n));
  if (res) x = x + (full ? V::load(res) : V::load_first(res, n));
  return x;
}

template <Act A>
void epilogue_rows(const float* src, int64_t lds, float* c, int64_t ldc, int64_t rows, int64_t cols,
                   const TileEpilogue& e) {
  const V alpha = V::set1(e.alpha), a = V::set1(e.act_alpha), b = V::set1(e.act_beta);
  const bool scale = e.alpha != 1.f;
  for (int64_t r = 0; r < rows; ++r) {
    const float* sr = src + r * lds;
    float* cr = c + r * ldc;
    const float* res = e.residual ? e.residual + r * e.ldr : nullptr;
    V row_bias = V::zero();
    if (e.bias_mode == TileEpilogue::Bias::PerRow) row_bias = V::set1(e.bias[r]);
    if (e.bias_mode == TileEpilogue::Bias::Scalar) row_bias = V::set1(e.bias[0]);
    const bool col_bias = e.bias_mode == TileEpilogue::Bias::PerCol;
    for (int64_t j = 0; j < cols; j += V::W) {
      const int n = cols - j < V::W ? static_cast<int>(cols - j) : V::W;
      const bool full = n == V::W;
      V x = full ? V::load(sr + j) : V::load_first(sr + j, n);
      x = epilogue_sum(x, scale, alpha, row_bias, col_bias ? e.bias + j : nullptr, res ? res + j : nullptr, n);
      x = activate<A>(x, a, b);
      if (full)
        x.store(cr + j);
      else
        x.store_first(cr + j, n);
    }
  }
}

// Calls f.template operator()<A>() for the activation a: one straight-line instance per
// activation, picked once per call (epilogue_copy, transpose_epilogue, depthwise_plane).
template <class F>
void with_act(Act a, F&& f) {
  switch (a) {
    case Act::None: return f.template operator()<Act::None>();
    case Act::Relu: return f.template operator()<Act::Relu>();
    case Act::LeakyRelu: return f.template operator()<Act::LeakyRelu>();
    case Act::Clip: return f.template operator()<Act::Clip>();
    case Act::Sigmoid: return f.template operator()<Act::Sigmoid>();
    case Act::Tanh: return f.template operator()<Act::Tanh>();
    case Act::Silu: return f.template operator()<Act::Silu>();
    case Act::HardSigmoid: return f.template operator()<Act::HardSigmoid>();
    case Act::HardSwish: return f.template operator()<Act::HardSwish>();
    case Act::Gelu: return f.template operator()<Act::Gelu>();
    case Act::GeluTanh: return f.template operator()<Act::GeluTanh>();
  }
}

void epilogue_copy(const float* src, int64_t lds, float* c, int64_t ldc, int64_t rows, int64_t cols,
                   const TileEpilogue& e) {
  with_act(e.act, [&]<Act A>() { epilogue_rows<A>(src, lds, c, ldc, rows, cols, e); });
}

// KernelTable::epilogue_blocks. Same operations in the same order as epilogue_rows with a
// column bias, so a blocked output holds the very floats the NCHW one would.
// VV: V, as a template parameter so that only the branch for its width is compiled.
template <Act A, class VV = V>
void epilogue_blocks_act(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t block_stride,
                         const TileEpilogue& e) {
  constexpr int kB = 8;  // kConvBlock
  const VV alpha = VV::set1(e.alpha), a = VV::set1(e.act_alpha), b = VV::set1(e.act_beta);
  const bool scale = e.alpha != 1.f;
  const bool col_bias = e.bias_mode == TileEpilogue::Bias::PerCol;
  auto finish = [&](VV x, VV bias, const float* res, int n) {
    if (scale) x = x * alpha;
    if (col_bias) x = x + bias;
    if (res) x = x + (n == VV::W ? VV::load(res) : VV::load_first(res, n));
    return activate<A>(x, a, b);
  };
  for (int64_t j = 0; j < cols; j += kB) {
    float* d = dst + (j / kB) * block_stride;
    const float* res = e.residual ? e.residual + (j / kB) * block_stride : nullptr;
    if constexpr (VV::W == 2 * kB) {  // two pixels' blocks per vector
      const VV bias = col_bias ? VV::load_halves(e.bias + j, e.bias + j) : VV::zero();
      int64_t r = 0;
      for (; r + 2 <= rows; r += 2)
        finish(VV::load_halves(src + r * lds + j, src + (r + 1) * lds + j), bias, res ? res + r * kB : nullptr, VV::W)
            .store(d + r * kB);
      if (r < rows)
        finish(VV::load_first(src + r * lds + j, kB), bias, res ? res + r * kB : nullptr, kB).store_first(d + r * kB, kB);
    } else {  // a block is whole vectors
      static_assert(kB % VV::W == 0);
      for (int64_t r = 0; r < rows; ++r)
        for (int q = 0; q < kB; q += VV::W) {
          const VV bias = col_bias ? VV::load(e.bias + j + q) : VV::zero();
          finish(VV::load(src + r * lds + j + q), bias, res ? res + r * kB + q : nullptr, VV::W).store(d + r * kB + q);
        }
    }
  }
}

void epilogue_blocks(const float* src, int64_t lds, int64_t rows, int64_t cols, float* dst, int64_t block_stride,
                     const TileEpilogue& e) {
  with_act(e.act, [&]<Act A>() { epilogue_blocks_act<A>(src, lds, rows, cols, dst, block_stride, e); });
}

void epilogue_tile(float* c, int64_t ldc, int64_t rows, int64_t cols, const TileEpilogue& e) {
  epilogue_copy(c, ldc, c, ldc, rows, cols, e);
}
