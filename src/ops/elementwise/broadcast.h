// Numpy-style broadcast iteration for up to three operands over a BroadcastPlan
// (kiln/ops/broadcast.h), shared by the binary, variadic, comparison and select (Where, PRelu)
// kernels.
#pragma once
#include <cstdint>
#include <vector>

#include "kiln/kernels/parallel.h"
#include "kiln/ops/broadcast.h"
#include "op_helpers.h"

namespace kiln::ops {

constexpr int64_t kParallelElements = 1 << 16;  // below this, threads cost more than they save

// Calls seg(out_offset, offsets[operands], len) for every innermost run of output
// elements in [begin, end) (begin/end are linear output indices).
template <typename Seg>
void for_each_run(const BroadcastPlan& p, int64_t begin, int64_t end, Seg&& seg) {
  if (begin >= end) return;
  const size_t r = p.dims.size();
  const int64_t inner = p.inner();
  // The odometer on the stack (plans rarely keep more than a few dims once merged): the
  // compiled runtime's fast comparisons run this on every inference and must not allocate.
  constexpr size_t kStackDims = 16;
  int64_t stack_idx[kStackDims] = {};
  std::vector<int64_t> heap_idx(r > kStackDims ? r : 0, 0);
  int64_t* idx = r > kStackDims ? heap_idx.data() : stack_idx;
  int64_t rest = begin;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rest % p.dims[d];
    rest /= p.dims[d];
  }
  int64_t off[BroadcastPlan::kMaxOperands] = {0, 0, 0};
  for (int k = 0; k < p.operands; ++k)
    for (size_t d = 0; d < r; ++d) off[k] += idx[d] * p.strides[k][d];
  int64_t pos = begin;
  while (pos < end) {
    int64_t len = std::min(inner - idx[r - 1], end - pos);
    seg(pos, off, len);
    pos += len;
    // advance the odometer by len along the innermost dim (carrying into outer dims)
    for (int k = 0; k < p.operands; ++k) off[k] += len * p.strides[k][r - 1];
    idx[r - 1] += len;
    for (size_t d = r - 1; d > 0 && idx[d] == p.dims[d]; --d) {
      for (int k = 0; k < p.operands; ++k) off[k] += p.strides[k][d - 1] - p.dims[d] * p.strides[k][d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// Runs body(begin, end) over [0, n), on several threads when n is large enough to pay.
template <typename Body>
void run_elementwise(int64_t n, int threads, Body&& body) {
  if (n >= kParallelElements && threads > 1)
    kernels::parallel_for(n, threads, [&](int64_t b, int64_t e) { body(b, e); });
  else
    body(0, n);
}

// o[i] = f(a[i], b[i]) over the broadcast plan; innermost strides specialised for 0/1.
template <typename O, typename A, typename B, typename F>
void broadcast_binary(const BroadcastPlan& p, const A* a, const B* b, O* o, int threads, F f) {
  run_elementwise(p.numel, threads, [&](int64_t begin, int64_t end) {
    const int64_t sa = p.strides[0].back(), sb = p.strides[1].back();
    for_each_run(p, begin, end, [&](int64_t oo, const int64_t* off, int64_t len) {
      const A* pa = a + off[0];
      const B* pb = b + off[1];
      O* po = o + oo;
      if (sa == 1 && sb == 1) {
        for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i]);
      } else if (sa == 1 && sb == 0) {
        const B bv = *pb;
        for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], bv);
      } else if (sa == 0 && sb == 1) {
        const A av = *pa;
        for (int64_t i = 0; i < len; ++i) po[i] = f(av, pb[i]);
      } else {
        for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i * sa], pb[i * sb]);
      }
    });
  });
}

// o[i] = f(a[i], b[i], c[i]) over a three-operand plan (Where).
template <typename O, typename A, typename B, typename C, typename F>
void broadcast_ternary(const BroadcastPlan& p, const A* a, const B* b, const C* c, O* o, int threads, F f) {
  run_elementwise(p.numel, threads, [&](int64_t begin, int64_t end) {
    const int64_t sa = p.strides[0].back(), sb = p.strides[1].back(), sc = p.strides[2].back();
    for_each_run(p, begin, end, [&](int64_t oo, const int64_t* off, int64_t len) {
      const A* pa = a + off[0];
      const B* pb = b + off[1];
      const C* pc = c + off[2];
      O* po = o + oo;
      if (sa == 1 && sb == 1 && sc == 1) {
        for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i], pb[i], pc[i]);
      } else {
        for (int64_t i = 0; i < len; ++i) po[i] = f(pa[i * sa], pb[i * sb], pc[i * sc]);
      }
    });
  });
}

}  // namespace kiln::ops
