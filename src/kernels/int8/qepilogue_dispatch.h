// The requantizing epilogue's variants as template parameters, shared by the SIMD tables
// (qgemm_avx512vnni.cpp, qgemm_ymm_epilogue.inl): each (output type, residual type) pair is its
// own straight-line instance, picked once per call instead of branched on per element.
#pragma once
#include <cstddef>
#include <cstdint>

#include "kiln/kernels/int8.h"

namespace kiln::kernels::int8::detail {

// Which residual the epilogue adds.
enum class Res : uint8_t { None, U8, S8, F32 };

inline Res res_of(const QEpilogue& e) {
  if (!e.residual) return Res::None;
  return e.residual_type == QType::U8 ? Res::U8 : e.residual_type == QType::S8 ? Res::S8 : Res::F32;
}

// The output column of GEMM column j (through e's phase grid), or -1 for a grid column the
// output drops (QEpilogue::grid_w).
inline int64_t output_column(const QEpilogue& e, int64_t j) {
  if (e.grid_w == 0) return j;
  const int64_t in_row = j % e.grid_w;
  return in_row < e.grid_valid ? j / e.grid_w * e.grid_valid + in_row : -1;
}

constexpr size_t out_size(QType t) { return t == QType::F32 ? 4 : 1; }
constexpr size_t res_size(Res r) { return r == Res::F32 ? 4 : 1; }

// Calls F<Out, R>::call(args...) for the epilogue's output and residual types.
template <template <QType, Res> class F, typename... Args>
void dispatch_epilogue(const QEpilogue& e, Args... args) {
  auto with_out = [&]<Res R>() {
    switch (e.out) {
      case QType::U8: F<QType::U8, R>::call(args...); break;
      case QType::S8: F<QType::S8, R>::call(args...); break;
      case QType::F32: F<QType::F32, R>::call(args...); break;
    }
  };
  switch (res_of(e)) {
    case Res::None: with_out.template operator()<Res::None>(); break;
    case Res::U8: with_out.template operator()<Res::U8>(); break;
    case Res::S8: with_out.template operator()<Res::S8>(); break;
    case Res::F32: with_out.template operator()<Res::F32>(); break;
  }
}

}  // namespace kiln::kernels::int8::detail
