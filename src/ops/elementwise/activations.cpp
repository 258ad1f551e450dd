// Activation functions (unary, some with alpha/beta/gamma attributes). Defaults follow
// the ONNX spec; numerically stable forms are used where the naive one overflows.
#include "elementwise/unary.h"

namespace kiln::ops {
namespace {

ElemParams alpha_param(const Node& n, double dflt) {
  ElemParams p;
  p.alpha = n.attr_f("alpha", static_cast<float>(dflt));
  return p;
}

struct ReluOp {
  static constexpr double kFlops = 1;
  static constexpr bool kIntegers = true;  // opset 14 adds signed integers
  template <typename T>
  static T apply(T x, const ElemParams&) {
    return x < T(0) ? T(0) : x;  // keeps NaN
  }
};

struct LeakyReluOp {
  static constexpr double kFlops = 2;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) { return alpha_param(n, 0.01); }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    return x < T(0) ? T(p.alpha) * x : x;
  }
};

struct ThresholdedReluOp {
  static constexpr double kFlops = 1;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) { return alpha_param(n, 1.0); }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    return x > T(p.alpha) ? x : T(0);
  }
};

struct EluOp {
  static constexpr double kFlops = 5;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) { return alpha_param(n, 1.0); }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    return x < T(0) ? T(p.alpha) * std::expm1(x) : x;
  }
};

// celu(x) = max(0, x) + min(0, alpha * (exp(x / alpha) - 1))
struct CeluOp {
  static constexpr double kFlops = 6;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) { return alpha_param(n, 1.0); }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    const T a = T(p.alpha);
    return std::max(T(0), x) + std::min(T(0), a * std::expm1(x / a));
  }
};

// selu(x) = gamma * x for x > 0, gamma * alpha * (exp(x) - 1) otherwise.
struct SeluOp {
  static constexpr double kFlops = 6;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) {
    ElemParams p;
    p.alpha = n.attr_f("alpha", 1.67326319217681884765625f);
    p.gamma = n.attr_f("gamma", 1.05070102214813232421875f);
    return p;
  }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    return x > T(0) ? T(p.gamma) * x : T(p.gamma) * (T(p.alpha) * std::exp(x) - T(p.alpha));
  }
};

struct SigmoidOp {
  static constexpr double kFlops = 4;
  static constexpr bool kIntegers = false;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    if (x >= T(0)) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);  // avoids exp(-x) overflowing for very negative x
    return e / (T(1) + e);
  }
};

// hardsigmoid(x) = max(0, min(1, alpha * x + beta))
struct HardSigmoidOp {
  static constexpr double kFlops = 4;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) {
    ElemParams p;
    p.alpha = n.attr_f("alpha", 0.2f);
    p.beta = n.attr_f("beta", 0.5f);
    return p;
  }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    return std::max(T(0), std::min(T(1), T(p.alpha) * x + T(p.beta)));
  }
};

// hardswish(x) = x * max(0, min(1, x / 6 + 0.5))
struct HardSwishOp {
  static constexpr double kFlops = 5;
  static constexpr bool kIntegers = false;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    return x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5)));
  }
};

// softplus(x) = ln(1 + e^x), written so e^x never overflows.
template <typename T>
T softplus(T x) {
  return x > T(0) ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x));
}

struct SoftplusOp {
  static constexpr double kFlops = 6;
  static constexpr bool kIntegers = false;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    return softplus(x);
  }
};

struct SoftsignOp {
  static constexpr double kFlops = 3;
  static constexpr bool kIntegers = false;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    return x / (T(1) + std::abs(x));
  }
};

// mish(x) = x * tanh(softplus(x))
struct MishOp {
  static constexpr double kFlops = 10;
  static constexpr bool kIntegers = false;
  template <typename T>
  static T apply(T x, const ElemParams&) {
    return x * std::tanh(softplus(x));
  }
};

// gelu: "none" = 0.5 x (1 + erf(x / sqrt 2)); "tanh" = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
struct GeluOp {
  static constexpr double kFlops = 10;
  static constexpr bool kIntegers = false;
  static ElemParams params(const Node& n) {
    std::string a = n.attr_s("approximate", "none");
    KILN_CHECK(a == "none" || a == "tanh", n.describe(), ": attribute approximate must be \"none\" or \"tanh\", got \"",
               a, "\"");
    ElemParams p;
    p.mode = a == "tanh" ? 1 : 0;
    return p;
  }
  template <typename T>
  static T apply(T x, const ElemParams& p) {
    if (p.mode == 1) {
      const T k = T(0.7978845608028654);  // sqrt(2 / pi)
      return T(0.5) * x * (T(1) + std::tanh(k * (x + T(0.044715) * x * x * x)));
    }
    return T(0.5) * x * (T(1) + std::erf(x * T(0.7071067811865476)));
  }
};

}  // namespace

OpDef def_Relu() { return unary_def<ReluOp>("Relu", 1, "y = max(0, x)"); }
OpDef def_LeakyRelu() {
  return unary_def<LeakyReluOp>("LeakyRelu", 1, "y = x < 0 ? alpha x : x (alpha 0.01)", {{"alpha", AttrKind::Float}});
}
OpDef def_ThresholdedRelu() {
  return unary_def<ThresholdedReluOp>("ThresholdedRelu", 10, "y = x > alpha ? x : 0 (alpha 1)",
                                      {{"alpha", AttrKind::Float}});
}
OpDef def_Elu() {
  return unary_def<EluOp>("Elu", 1, "y = x < 0 ? alpha (e^x - 1) : x (alpha 1)", {{"alpha", AttrKind::Float}});
}
OpDef def_Celu() {
  return unary_def<CeluOp>("Celu", 12, "y = max(0,x) + min(0, alpha (e^(x/alpha) - 1))", {{"alpha", AttrKind::Float}});
}
OpDef def_Selu() {
  return unary_def<SeluOp>("Selu", 1, "y = gamma (x > 0 ? x : alpha (e^x - 1))",
                           {{"alpha", AttrKind::Float}, {"gamma", AttrKind::Float}});
}
OpDef def_Sigmoid() { return unary_def<SigmoidOp>("Sigmoid", 1, "y = 1 / (1 + e^-x)"); }
OpDef def_HardSigmoid() {
  return unary_def<HardSigmoidOp>("HardSigmoid", 1, "y = clamp(alpha x + beta, 0, 1) (0.2, 0.5)",
                                  {{"alpha", AttrKind::Float}, {"beta", AttrKind::Float}});
}
OpDef def_HardSwish() { return unary_def<HardSwishOp>("HardSwish", 14, "y = x clamp(x/6 + 1/2, 0, 1)"); }
OpDef def_Softplus() { return unary_def<SoftplusOp>("Softplus", 1, "y = ln(1 + e^x)"); }
OpDef def_Softsign() { return unary_def<SoftsignOp>("Softsign", 1, "y = x / (1 + |x|)"); }
// ONNX adds Mish in opset 18 and Gelu in opset 20; kiln accepts both at every opset it imports.
OpDef def_Mish() { return unary_def<MishOp>("Mish", 1, "y = x tanh(ln(1 + e^x))"); }
OpDef def_Gelu() {
  return unary_def<GeluOp>("Gelu", 1, "y = x Phi(x), exact (erf) or tanh approximation",
                           {{"approximate", AttrKind::String}});
}

}  // namespace kiln::ops
