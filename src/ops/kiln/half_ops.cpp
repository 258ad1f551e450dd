// kiln.HalfConv / kiln.HalfMatMul: kiln.FusedConv / kiln.FusedMatMul whose constant weight is
// stored in 16 bits (bf16 or f16), made by compress's precision-bf16 / precision-fp16 passes.
// Meaning, shape inference, cost and reference kernel are the fused ops' (the reference widens the
// weight to f32 and computes in f32); the compiled runtime runs bf16 weights with the AVX512-BF16
// dot product where the CPU has it (activations rounded to bf16: kernels/bf16.h states the
// tolerance) and the f32 kernels on the widened weight otherwise (fast_half_*.cpp).
#include "kiln_common.h"

namespace kiln::ops {

OpDef def_FusedConv();
OpDef def_FusedMatMul();

OpDef def_HalfConv() {
  OpDef d = def_FusedConv();
  d.name = "HalfConv";
  d.doc = "FusedConv with a 16-bit (bf16/f16) constant weight, computed in f32 (bf16 dot products where available)";
  return d;
}

OpDef def_HalfMatMul() {
  OpDef d = def_FusedMatMul();
  d.name = "HalfMatMul";
  d.doc = "FusedMatMul with a 16-bit (bf16/f16) constant weight, computed in f32 (bf16 dot products where available)";
  return d;
}

}  // namespace kiln::ops
