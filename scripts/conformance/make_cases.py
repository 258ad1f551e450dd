#!/usr/bin/python3
"""Generates kiln's op conformance cases: small single-node ONNX models with seeded inputs.

    /usr/bin/python3 scripts/conformance/make_cases.py [OUT_DIR]   (default build/conformance)

Writes OUT_DIR/<Op>_<case>/{model.onnx, inputs/<name>.npy, meta.txt} for every op listed in
src/ops/op_list.inc, and OUT_DIR/no_case.txt naming each listed op without a case and why
(the generator fails if an op has neither). ort_cases.js then adds ORT's outputs under ort/.
Deterministic: one seeded generator, cases produced in a fixed order.
"""
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import cases_common  # noqa: E402
import cases_control_quant  # noqa: E402
import cases_elementwise  # noqa: E402
import cases_nn  # noqa: E402
import cases_reduce  # noqa: E402
import cases_tensor  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))

# Ops in op_list.inc deliberately without a case, with the reason. Empty today: every op has
# cases. An op listed here is reported by the C++ test instead of failing it.
# kiln's own ops (domain "kiln") are not ONNX: ORT cannot be their reference. Each is tested
# against the ONNX graph it replaces (tests/ops/test_kiln_*.cpp) and through the zoo.
NO_CASE = {
    "Attention": "kiln domain: checked against MatMul/Softmax/MatMul in tests/ops/test_kiln_norm_attention_ops.cpp",
    "FusedConv": "kiln domain: checked against Conv + Add + activation in tests/ops/test_kiln_epilogue_ops.cpp",
    "ExpandDepthwise": "kiln domain: checked against Conv -> Clip -> depthwise Conv -> Relu in tests/ops/test_kiln_expand_depthwise_op.cpp",
    "DepthwiseProject": "kiln domain: checked against depthwise Conv -> Clip -> 1x1 Conv -> Add in tests/ops/test_kiln_depthwise_project_op.cpp",
    "StemDepthwiseProject": "kiln domain: checked against stem Conv -> Clip -> depthwise Conv -> Clip -> 1x1 Conv -> Add in tests/ops/test_kiln_stem_depthwise_project_op.cpp",
    "FusedElementwise": "kiln domain: runs its body graph; checked in tests/ops and tests/codegen",
    "FusedMatMul": "kiln domain: checked against MatMul/Gemm + Add + activation in tests/ops/test_kiln_epilogue_ops.cpp",
    "LayerNorm": "kiln domain: checked against ONNX LayerNormalization in tests/ops/test_kiln_norm_attention_ops.cpp",
    "QConv": "kiln domain: checked against QLinearConv and DQ -> Conv -> Q in tests/compress/quantized_ops_test.cpp",
    "HalfConv": "kiln domain: checked against Conv on the widened weights in tests/compress/bf16_test.cpp",
    "HalfMatMul": "kiln domain: checked against MatMul on the widened weights in tests/compress/bf16_test.cpp",
    "QLookup": "kiln domain: checked against the DequantizeLinear -> element-wise -> QuantizeLinear chain it replaces in tests/compress/fold_qdq_lookup_test.cpp",
    "QMatMul": "kiln domain: checked against QLinearMatMul and DynamicQuantizeLinear/MatMulInteger in tests/compress/quantized_ops_test.cpp",
}

# Variants deliberately left out, because ORT cannot serve as the reference for them:
# - RNN/GRU/LSTM layout=1: ORT's CPU kernels refuse batch-major layout.
# - LRN with an even size: ORT requires an odd size.
# - Dropout mask before opset 12: unspecified in inference (ORT all false, opset 12 all true).
# - ConvTranspose output_shape beyond the full output (negative total padding): ORT puts it at
#   the head, PyTorch's output_padding at the tail; kiln rejects it.
# - ORT CPU lacks kernels for: Where on bool, Upsample on i64, OneHot with i64 values and f32
#   depth, so those dtype combinations are not generated.


def listed_ops():
    with open(os.path.join(ROOT, "src", "ops", "op_list.inc")) as fh:
        lines = [ln.split("//")[0] for ln in fh]  # the header comment mentions KILN_OP(Name)
    return re.findall(r"KILN_OP\((\w+)\)", "".join(lines))


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "conformance"))
    for mod in (cases_elementwise, cases_reduce, cases_nn, cases_tensor, cases_control_quant):
        mod.generate()
    cases = cases_common.CASES
    ops = listed_ops()
    unknown = sorted({c.op for c in cases} - set(ops))
    if unknown:
        sys.exit(f"make_cases: cases for ops not in op_list.inc: {unknown}")
    covered = {c.op for c in cases}
    missing = [op for op in ops if op not in covered and op not in NO_CASE]
    if missing:
        sys.exit(f"make_cases: ops with no case and no reason in NO_CASE: {missing}")

    if os.path.isdir(out):
        shutil.rmtree(out)  # stale cases from an older generator must not linger
    os.makedirs(out)
    for c in cases:
        cases_common.write_case(c, out)
    with open(os.path.join(out, "no_case.txt"), "w") as fh:
        for op, why in sorted(NO_CASE.items()):
            fh.write(f"{op}: {why}\n")
    print(f"make_cases: {len(cases)} cases for {len(covered)} of {len(ops)} ops in {out}")


if __name__ == "__main__":
    main()
