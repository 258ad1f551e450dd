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

// F::call<Out, R>(args...) for the epilogue's output and residual types.
// F is a class with a member template, not a class template passed as a template template
// argument: GCC 12 gives a specialisation on a template template argument from an anonymous
// namespace external (weak) linkage (with or without a lambda in between), so two translation
// units instantiating it with their own StripEpilogueY (AVX-VNNI's 6-row tile, AVX2's 5-row
// narrow tile) shared one copy, and the AVX-VNNI table ran the other file's tile on its panels.
// Type arguments keep internal linkage; the ctest build.isa_objects_share_no_kiln_symbols
// checks the built objects.
template <class F, Res R, typename... Args>
void dispatch_epilogue_out(const QEpilogue& e, Args... args) {
  switch (e.out) {
    case QType::U8: F::template call<QType::U8, R>(args...); break;
    case QType::S8: F::template call<QType::S8, R>(args...); break;
    case QType::F32: F::template call<QType::F32, R>(args...); break;
  }
}

template <class F, typename... Args>
void dispatch_epilogue(const QEpilogue& e, Args... args) {
  switch (res_of(e)) {
    case Res::None: dispatch_epilogue_out<F, Res::None>(e, args...); break;
    case Res::U8: dispatch_epilogue_out<F, Res::U8>(e, args...); break;
    case Res::S8: dispatch_epilogue_out<F, Res::S8>(e, args...); break;
    case Res::F32: dispatch_epilogue_out<F, Res::F32>(e, args...); break;
  }
}

}  // namespace kiln::kernels::int8::detail
