// INT8 post-training quantization of a float model.
//
// Static (QDQ): the quantizer picks the Conv / MatMul / Gemm nodes with constant float weights,
// the activation tensors around them (their inputs; their outputs after a Relu/Clip; Add results
// whose inputs are both quantized, so residual blocks stay int8), calibrates those tensors, and
// rewrites the model in the standard QDQ form ONNX Runtime reads:
//   x -> QuantizeLinear -> DequantizeLinear -> consumers          (per tensor, u8 or i8)
//   weight: i8 initializer -> DequantizeLinear(axis = output channels), zero point 0, symmetric
//   bias:   i32 initializer at scale x_scale * w_scale -> DequantizeLinear
// Tensors produced by MaxPool / Reshape / Flatten / Squeeze / Unsqueeze / Transpose from a
// quantized tensor share its parameters, so those ops can run on int8 (fold-qdq).
// `kiln compile` (fold-qdq at -O2) turns the QDQ model into kiln.QConv / kiln.QMatMul.
//
// Dynamic: kiln.FusedMatMul nodes with a constant weight (after the -O2 fusions) become
// kiln.QMatMul with an f32 input quantized per run; weights are quantized per output column.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/compress/observer.h"
#include "kiln/ir/graph.h"
#include "kiln/passes/pass.h"

namespace kiln::compress {

struct QuantizeOptions {
  Calibration calibration;
  bool per_channel = true;              // weights per output channel (else per tensor)
  DType activations = DType::u8;        // u8 or i8
  // Weights in 7 bits (|q| <= 63), as ONNX Runtime's quantizer does with reduce_range: its u8 x s8
  // kernels on CPUs without VNNI multiply with vpmaddubsw, whose int16 pair sums saturate
  // above 32767 (255 x 127 x 2 does), so a full-range QDQ model runs wrong in ORT there. kiln's
  // own kernels are exact either way; this costs one bit of weight precision.
  bool reduce_range = false;
  std::vector<std::string> exclude;     // node names kept in float
  // Bias correction: the mean output shift the weight rounding causes, (Wq - W) E[x] with E[x]
  // the calibration mean of each input channel, is subtracted from the bias (after DFQ, Nagel
  // et al. 2019). Post-ReLU inputs have a large mean, so this removes most of the weight error.
  bool bias_correction = true;
};

// What the static quantizer will quantize in `m` (a float model, shapes inferred).
struct QuantPlan {
  std::vector<std::string> nodes;                  // Conv/MatMul/Gemm node names, in graph order
  std::vector<std::string> tensors;                // activation tensors to calibrate, in graph order
  std::map<std::string, std::string> shared;       // tensor -> tensor whose parameters it reuses
  std::map<std::string, int> channel_axis;         // quantized nodes' inputs: their channel axis
  std::vector<std::string> skipped;                // "node: why" for compute nodes left in float
};
QuantPlan plan_static(const Model& m, const QuantizeOptions& opt);

// Rewrites `m` into QDQ form with the parameters chosen from the observers (one per planned
// tensor). The model verifies and infers afterwards. Returns one line per quantized node.
std::vector<std::string> apply_static(Model& m, const QuantPlan& plan, const std::map<std::string, Observer>& observers,
                                      const QuantizeOptions& opt);

// The float clean-ups run before planning (constant folding, BatchNorm folding, dce): ONNX ops only.
void prepare_float_model(Model& m);

// Symmetric per-channel int8 quantization of a float weight along `axis`:
// scale[c] = max |w[c]| / qmax (1 when the channel is all zero), q = round_half_even(w / scale),
// qmax 127 (63 with reduce_range).
struct QuantizedWeight {
  Tensor q;      // i8, w's dims
  Tensor scale;  // f32 [channels] (or [1] when per tensor)
};
QuantizedWeight quantize_weight(const Tensor& w, int64_t axis, bool per_channel, int qmax = 127);

// The pass "quantize-dynamic" (FusedMatMul with a constant weight -> dynamic kiln.QMatMul).
std::unique_ptr<passes::Pass> make_quantize_dynamic_pass();
// The passes "precision-bf16" / "precision-fp16" (type bf16 / f16): Conv, MatMul, FusedConv and
// FusedMatMul with a constant f32 weight -> kiln.HalfConv / kiln.HalfMatMul with a 16-bit weight.
std::unique_ptr<passes::Pass> make_precision_pass(DType type);
// Adds kiln's compress passes to the global registry (once; later calls do nothing).
void register_passes();

}  // namespace kiln::compress
