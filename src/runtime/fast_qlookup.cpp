// kiln.QLookup (ops/kiln/qlookup.cpp): y[i] = table[byte(x[i])] with the table copied into the
// step's state when it is prepared (a constant input), the bytes XORed for i8 inputs; split
// over threads for large tensors. Declines a non-constant table (the reference kernel runs it).
#include <cstring>

#include "kiln/kernels/parallel.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct LookupState {
  DType out = DType::u8;
  uint8_t flip = 0;
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
  st->flip = x->dtype == DType::i8 ? 0x80 : 0;
  st->n = *x->shape.numel();
  if (st->out == DType::f32) std::memcpy(st->floats, t->initializer->raw(), sizeof st->floats);
  else if (st->out == DType::u8 || st->out == DType::i8) std::memcpy(st->bytes, t->initializer->raw(), sizeof st->bytes);
  else return false;
  ctx.state = st;
  return true;
}

// Two loads and a store per element; unrolled, and the XOR only for i8 inputs.
template <bool Flip, typename Out>
void look_up(const uint8_t* x, const Out* table, Out* y, int64_t b, int64_t e) {
#pragma GCC unroll 8
  for (int64_t i = b; i < e; ++i) y[i] = table[Flip ? x[i] ^ 0x80 : x[i]];
}

void run(StepContext& ctx) {
  const LookupState& st = *static_cast<const LookupState*>(ctx.state.get());
  const auto* x = static_cast<const uint8_t*>(ctx.in(0).raw());
  void* y = ctx.out(0).raw();
  kernels::parallel_for(st.n, kernels::threads_for_work(static_cast<double>(st.n), ctx.threads),
                        [&](int64_t b, int64_t e) {
                          auto* yb = static_cast<uint8_t*>(y);
                          auto* yf = static_cast<float*>(y);
                          if (st.out == DType::f32) {
                            if (st.flip) look_up<true>(x, st.floats, yf, b, e);
                            else look_up<false>(x, st.floats, yf, b, e);
                          } else if (st.flip) {
                            look_up<true>(x, st.bytes, yb, b, e);
                          } else {
                            look_up<false>(x, st.bytes, yb, b, e);
                          }
                        });
}

}  // namespace

FastKernel fast_QLookup() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime
