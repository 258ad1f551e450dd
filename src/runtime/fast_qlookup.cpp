// kiln.QLookup (ops/kiln/qlookup.cpp): y[i] = table[byte(x[i])] with the table copied into the
// step's state when it is prepared (a constant input), reordered for i8 inputs so that the raw
// byte indexes it; byte tables through kernels::int8::lookup_bytes (AVX2 shuffles), float tables
// in a plain loop; split over threads for large tensors. Declines a non-constant table (the
// reference kernel runs it).

#include "kiln/kernels/int8.h"
#include "kiln/kernels/parallel.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct LookupState {
  DType out = DType::u8;
  int64_t n = 0;
  alignas(64) uint8_t bytes[256] = {};
  alignas(64) float floats[256] = {};
};

bool prepare(StepContext& ctx) {
  const Node& n = *ctx.node;
  const Value* x = n.input(0);
  const Value* t = n.input(1);
  if (!x->shape.is_static() || (x->dtype != DType::u8 && x->dtype != DType::i8)) return false;
  if (!t || !t->is_constant() || t->initializer->numel() != 256) return false;
  auto st = std::make_shared<LookupState>();
  st->out = t->initializer->dtype();
  st->n = *x->shape.numel();
  // The table lists outputs in value order; an i8 byte b holds the value of entry b ^ 0x80.
  const int flip = x->dtype == DType::i8 ? 0x80 : 0;
  if (st->out == DType::f32) {
    for (int b = 0; b < 256; ++b) st->floats[b] = t->initializer->data<float>()[b ^ flip];
  } else if (st->out == DType::u8 || st->out == DType::i8) {
    const auto* raw = static_cast<const uint8_t*>(t->initializer->raw());
    for (int b = 0; b < 256; ++b) st->bytes[b] = raw[b ^ flip];
  } else {
    return false;
  }
  ctx.state = st;
  return true;
}

void run(StepContext& ctx) {
  const LookupState& st = *static_cast<const LookupState*>(ctx.state.get());
  const auto* x = static_cast<const uint8_t*>(ctx.in(0).raw());
  void* y = ctx.out(0).raw();
  kernels::parallel_for(st.n, kernels::threads_for_work(static_cast<double>(st.n), ctx.threads),
                        [&](int64_t b, int64_t e) {
                          if (st.out != DType::f32) {
                            kernels::int8::lookup_bytes(x + b, st.bytes, static_cast<uint8_t*>(y) + b, e - b);
                            return;
                          }
                          // Float tables stay a plain loop: AVX2 gathers were slower on Zen 3 (efficientnet_b0's
                          // 16 float lookups 0.8 -> 1.0 ms).
                          float* yf = static_cast<float*>(y);
#pragma GCC unroll 8
                          for (int64_t i = b; i < e; ++i) yf[i] = st.floats[x[i]];
                        });
}

}  // namespace

FastKernel fast_QLookup() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime
