"""Cases for ops/tensor: data movement and shape computations."""
import numpy as np
from onnx import TensorProto, helper

from cases_common import add, bools, i64, ints, randn, scalar


def concat_split():
    add("axis0", "Concat", [("a", randn(2, 3)), ("b", randn(1, 3))], {"axis": 0}, opset=13)
    add("axis_neg1_three", "Concat", [("a", randn(2, 1)), ("b", randn(2, 3)), ("c", randn(2, 2))], {"axis": -1},
        opset=13)
    add("one_input", "Concat", [("a", randn(4))], {"axis": 0}, opset=13)
    add("with_empty", "Concat", [("a", randn(0, 3)), ("b", randn(2, 3))], {"axis": 0}, opset=13)
    add("i64", "Concat", [("a", ints(2, 2)), ("b", ints(2, 1))], {"axis": 1}, opset=11)
    add("bool", "Concat", [("a", bools(1, 2, 2)), ("b", bools(2, 2, 2))], {"axis": 0}, opset=11)
    add("u8_opset7", "Concat", [("a", ints(3, lo=0, hi=255, dtype=np.uint8)), ("b", ints(2, lo=0, hi=255,
                                                                                       dtype=np.uint8))],
        {"axis": 0}, opset=7)
    # Split: opset 11 sizes attribute, opset 13 sizes input; even split when absent.
    add("op11_even", "Split", [("x", randn(6, 2))], opset=11, outs=3)
    add("op11_sizes", "Split", [("x", randn(2, 7))], {"axis": 1, "split": [2, 5]}, opset=11, outs=2)
    add("op11_neg_axis", "Split", [("x", randn(2, 3, 4))], {"axis": -1}, opset=11, outs=2)
    add("op13_sizes_const", "Split", [("x", randn(5, 2)), ("s", i64(1, 3, 1))], opset=13, outs=3, consts=["s"])
    add("op13_even", "Split", [("x", randn(3, 4))], {"axis": 1}, opset=13, outs=2)
    add("op13_zero_size", "Split", [("x", randn(4)), ("s", i64(0, 4))], opset=13, outs=2, consts=["s"])
    add("op7_i64", "Split", [("x", ints(4, 2))], {"split": [1, 3]}, opset=7, outs=2)


def reshape_like():
    add("basic", "Reshape", [("x", randn(2, 3, 4)), ("s", i64(4, 6))], opset=13, consts=["s"])
    add("infer_minus1", "Reshape", [("x", randn(2, 3, 4)), ("s", i64(-1, 4))], opset=13, consts=["s"])
    add("zero_copies", "Reshape", [("x", randn(2, 3, 4)), ("s", i64(0, -1))], opset=13, consts=["s"])
    add("to_scalar", "Reshape", [("x", randn(1, 1)), ("s", np.zeros(0, np.int64))], opset=13, consts=["s"])
    add("shape_input", "Reshape", [("x", randn(6)), ("s", i64(3, 2))], opset=13)
    add("allowzero", "Reshape", [("x", randn(0, 3)), ("s", i64(3, 0))], {"allowzero": 1}, opset=14, consts=["s"])
    add("i64_op7", "Reshape", [("x", ints(2, 6)), ("s", i64(3, -1, 2))], opset=7, consts=["s"])
    add("default", "Flatten", [("x", randn(2, 3, 4))], opset=13)
    add("axis0", "Flatten", [("x", randn(2, 3, 4))], {"axis": 0}, opset=13)
    add("axis3", "Flatten", [("x", randn(2, 3, 4))], {"axis": 3}, opset=13)
    add("axis_neg1", "Flatten", [("x", randn(2, 3, 4))], {"axis": -1}, opset=11)
    add("i64", "Flatten", [("x", ints(2, 2, 2))], opset=9)
    # Squeeze / Unsqueeze: axes attribute up to opset 12, input from 13.
    add("op11_axes", "Squeeze", [("x", randn(1, 3, 1, 4))], {"axes": [0, 2]}, opset=11)
    add("op11_all", "Squeeze", [("x", randn(1, 3, 1, 4))], opset=11)
    add("op11_neg", "Squeeze", [("x", randn(2, 1))], {"axes": [-1]}, opset=11)
    add("op13_axes_const", "Squeeze", [("x", randn(1, 3, 1)), ("a", i64(-1))], opset=13, consts=["a"])
    add("op13_axes_input", "Squeeze", [("x", randn(1, 3, 1)), ("a", i64(0, 2))], opset=13)
    add("op13_all", "Squeeze", [("x", randn(1, 1, 1))], opset=13)
    add("op13_i64", "Squeeze", [("x", ints(3, 1))], opset=13)
    add("op11_axes", "Unsqueeze", [("x", randn(3, 4))], {"axes": [0, 3]}, opset=11)
    add("op11_neg", "Unsqueeze", [("x", randn(3, 4))], {"axes": [-1]}, opset=11)
    add("op13_const", "Unsqueeze", [("x", randn(3)), ("a", i64(1, 0))], opset=13, consts=["a"])
    add("op13_scalar", "Unsqueeze", [("x", scalar(2.5, np.float32)), ("a", i64(0))], opset=13, consts=["a"])
    add("op13_input", "Unsqueeze", [("x", randn(2, 3)), ("a", i64(-1, 1))], opset=13)
    add("op13_bool", "Unsqueeze", [("x", bools(2)), ("a", i64(0))], opset=13, consts=["a"])


def transpose_like():
    add("default", "Transpose", [("x", randn(2, 3, 4))], opset=13)
    add("perm", "Transpose", [("x", randn(2, 3, 4))], {"perm": [1, 0, 2]}, opset=13)
    add("perm4d", "Transpose", [("x", randn(1, 2, 3, 4))], {"perm": [0, 3, 1, 2]}, opset=13)
    add("i64", "Transpose", [("x", ints(3, 2))], opset=7)
    add("empty", "Transpose", [("x", randn(0, 3))], opset=13)
    add("bool_1d", "Transpose", [("x", bools(5))], opset=13)
    add("dcr", "DepthToSpace", [("x", randn(1, 8, 2, 3))], {"blocksize": 2}, opset=13)
    add("crd", "DepthToSpace", [("x", randn(2, 8, 2, 2))], {"blocksize": 2, "mode": "CRD"}, opset=13)
    add("op7_b3", "DepthToSpace", [("x", randn(1, 9, 1, 2))], {"blocksize": 3}, opset=7)
    add("b2", "SpaceToDepth", [("x", randn(1, 2, 4, 6))], {"blocksize": 2}, opset=13)
    add("b3", "SpaceToDepth", [("x", randn(2, 1, 3, 3))], {"blocksize": 3}, opset=7)
    add("upper", "Trilu", [("x", randn(4, 5))], opset=14)
    add("lower", "Trilu", [("x", randn(4, 5))], {"upper": 0}, opset=14)
    add("upper_k1", "Trilu", [("x", randn(2, 3, 4)), ("k", scalar(1, np.int64))], opset=14)
    add("lower_kneg1", "Trilu", [("x", randn(5, 3)), ("k", scalar(-1, np.int64))], {"upper": 0}, opset=14)
    add("upper_k_big", "Trilu", [("x", randn(3, 3)), ("k", scalar(5, np.int64))], opset=14)
    add("i64_lower", "Trilu", [("x", ints(3, 4)), ("k", scalar(2, np.int64))], {"upper": 0}, opset=14,
        consts=["k"])


def expand_tile_pad():
    add("bcast", "Expand", [("x", randn(3, 1)), ("s", i64(2, 3, 4))], opset=13, consts=["s"])
    add("shape_smaller", "Expand", [("x", randn(2, 1, 4)), ("s", i64(3, 1))], opset=8, consts=["s"])
    add("shape_input", "Expand", [("x", ints(1, 2)), ("s", i64(3, 2))], opset=13)
    add("scalar", "Expand", [("x", scalar(1.5, np.float32)), ("s", i64(2, 2))], opset=13, consts=["s"])
    add("basic", "Tile", [("x", randn(2, 3)), ("r", i64(2, 1))], opset=13, consts=["r"])
    add("input_repeats", "Tile", [("x", randn(1, 2, 2)), ("r", i64(3, 1, 2))], opset=13)
    add("zero_repeat", "Tile", [("x", randn(2, 2)), ("r", i64(0, 2))], opset=13, consts=["r"])
    add("i64", "Tile", [("x", ints(3)), ("r", i64(2))], opset=7)
    # Pad: attributes up to opset 10, inputs from 11.
    add("op7_const", "Pad", [("x", randn(2, 3))], {"pads": [1, 0, 0, 2], "value": 1.5}, opset=7)
    add("op7_reflect", "Pad", [("x", randn(3, 4))], {"pads": [1, 2, 1, 2], "mode": "reflect"}, opset=7)
    add("op11_const", "Pad", [("x", randn(2, 3)), ("p", i64(0, 1, 2, 0))], opset=11, consts=["p"])
    add("op11_value", "Pad", [("x", randn(2, 3)), ("p", i64(1, 1, 1, 1)), ("v", scalar(-2.0, np.float32))],
        opset=11, consts=["p"])
    add("op11_reflect", "Pad", [("x", randn(1, 3, 4)), ("p", i64(0, 2, 1, 0, 1, 3))], {"mode": "reflect"},
        opset=11, consts=["p"])
    add("op11_edge", "Pad", [("x", randn(1, 3, 4)), ("p", i64(0, 2, 3, 0, 1, 2))], {"mode": "edge"},
        opset=13, consts=["p"])
    add("op11_negative", "Pad", [("x", randn(4, 5)), ("p", i64(-1, 1, 0, -2))], opset=13, consts=["p"])
    add("op11_pads_input", "Pad", [("x", randn(3)), ("p", i64(2, 1))], opset=11)
    add("op13_i64", "Pad", [("x", ints(2, 2)), ("p", i64(1, 0, 1, 0)), ("v", scalar(7, np.int64))], opset=13,
        consts=["p"])
    add("op13_bool", "Pad", [("x", bools(2, 2)), ("p", i64(0, 1, 0, 1))], opset=13, consts=["p"])


def slice_cases():
    x = randn(5, 6)
    add("op9_attrs", "Slice", [("x", x)], {"starts": [1, 0], "ends": [3, 4]}, opset=9)
    add("op9_axes_clamp", "Slice", [("x", randn(4, 5))], {"starts": [-3], "ends": [1000], "axes": [1]}, opset=9)
    add("op10_basic", "Slice", [("x", randn(5, 6)), ("s", i64(1, 2)), ("e", i64(4, 5))], opset=10,
        consts=["s", "e"])
    add("op10_axes", "Slice", [("x", randn(3, 4, 5)), ("s", i64(1)), ("e", i64(-1)), ("a", i64(-1))], opset=10,
        consts=["s", "e", "a"])
    add("op13_steps", "Slice", [("x", randn(6, 7)), ("s", i64(0, 1)), ("e", i64(6, 7)), ("a", i64(0, 1)),
                                ("st", i64(2, 3))], opset=13, consts=["s", "e", "a", "st"])
    add("op13_neg_step", "Slice", [("x", randn(5, 4)), ("s", i64(-1)), ("e", i64(-1000)), ("a", i64(0)),
                                   ("st", i64(-1))], opset=13, consts=["s", "e", "a", "st"])
    add("op13_neg_step2", "Slice", [("x", randn(7)), ("s", i64(5)), ("e", i64(0)), ("a", i64(0)),
                                    ("st", i64(-2))], opset=13, consts=["s", "e", "a", "st"])
    add("op13_empty_result", "Slice", [("x", randn(4, 3)), ("s", i64(3)), ("e", i64(1))], opset=13,
        consts=["s", "e"])
    add("op13_int_max_end", "Slice", [("x", randn(3, 4)), ("s", i64(1)), ("e", i64(np.iinfo(np.int64).max)),
                                      ("a", i64(1))], opset=13, consts=["s", "e", "a"])
    add("op13_inputs_dynamic", "Slice", [("x", randn(4, 4)), ("s", i64(0, 1)), ("e", i64(2, 3))], opset=13)
    add("op13_i32_indices", "Slice", [("x", ints(5, 3)), ("s", np.array([1], np.int32)),
                                      ("e", np.array([4], np.int32))], opset=13, consts=["s", "e"])
    add("op13_omitted_axes_steps", "Slice", [("x", randn(4, 4)), ("s", i64(1)), ("e", i64(3)), None,
                                             ("st", i64(2))], opset=13, consts=["s", "e", "st"])


def gather_scatter():
    add("axis0", "Gather", [("x", randn(5, 3)), ("i", i64(0, 4, 2, 2))], opset=13)
    add("axis1_2d_idx", "Gather", [("x", randn(2, 5, 3)), ("i", np.array([[1, 0], [4, 3]], np.int64))],
        {"axis": 1}, opset=13)
    add("neg_idx", "Gather", [("x", randn(4, 2)), ("i", i64(-1, -4, 0))], opset=13)
    add("scalar_idx", "Gather", [("x", randn(3, 4)), ("i", scalar(2, np.int64))], {"axis": 1}, opset=11)
    add("i32_idx", "Gather", [("x", ints(6)), ("i", np.array([5, 0, 1], np.int32))], opset=11)
    add("const_table", "Gather", [("x", randn(10, 4)), ("i", ints(2, 3, lo=0, hi=9))], opset=13, consts=["x"])
    add("op7", "Gather", [("x", randn(3, 3)), ("i", i64(1))], {"axis": -1}, opset=7)
    add("empty_idx", "Gather", [("x", randn(3, 2)), ("i", np.zeros(0, np.int64))], opset=13)
    add("axis1", "GatherElements", [("x", randn(3, 4)), ("i", ints(3, 2, lo=0, hi=3))], {"axis": 1}, opset=13)
    add("axis0_neg_idx", "GatherElements", [("x", randn(3, 4)), ("i", ints(2, 4, lo=-3, hi=2))], opset=13)
    add("3d_i32", "GatherElements", [("x", ints(2, 3, 2)), ("i", ints(2, 2, 2, lo=0, hi=2, dtype=np.int32))],
        {"axis": 1}, opset=11)
    add("full_index", "GatherND", [("x", randn(2, 3)), ("i", np.array([[0, 1], [1, 2]], np.int64))], opset=13)
    add("slice_index", "GatherND", [("x", randn(2, 3, 4)), ("i", np.array([[1], [0]], np.int64))], opset=11)
    add("batch_dims1", "GatherND", [("x", randn(2, 3, 4)), ("i", np.array([[[1, 2]], [[0, 3]]], np.int64))],
        {"batch_dims": 1}, opset=12)
    add("neg_idx", "GatherND", [("x", randn(3, 3)), ("i", np.array([[-1, 0], [0, -2]], np.int64))], opset=13)
    se_x = randn(3, 4)
    add("axis1", "ScatterElements", [("x", se_x), ("i", np.array([[1, 3], [0, 2], [2, 1]], np.int64)),
                                     ("u", randn(3, 2))], {"axis": 1}, opset=13)
    add("axis0_neg", "ScatterElements", [("x", randn(3, 3)), ("i", np.array([[-1, 0, 1]], np.int64)),
                                         ("u", randn(1, 3))], opset=11)
    add("add_dupes", "ScatterElements", [("x", randn(4)), ("i", i64(1, 1, 3)), ("u", randn(3))],
        {"reduction": "add"}, opset=16)
    add("mul", "ScatterElements", [("x", randn(2, 3)), ("i", np.array([[2, 0]], np.int64)), ("u", randn(1, 2))],
        {"axis": 1, "reduction": "mul"}, opset=16)
    add("i64", "ScatterElements", [("x", ints(5)), ("i", i64(4, 0)), ("u", ints(2))], opset=13)
    add("elements", "ScatterND", [("x", randn(4, 3)), ("i", np.array([[0, 1], [3, 2]], np.int64)),
                                  ("u", randn(2))], opset=13)
    add("rows", "ScatterND", [("x", randn(4, 3)), ("i", np.array([[2], [0]], np.int64)), ("u", randn(2, 3))],
        opset=11)
    add("add_dupes", "ScatterND", [("x", randn(5)), ("i", np.array([[1], [1], [4]], np.int64)), ("u", randn(3))],
        {"reduction": "add"}, opset=16)
    add("mul", "ScatterND", [("x", randn(2, 2)), ("i", np.array([[0, 0], [0, 0]], np.int64)), ("u", randn(2))],
        {"reduction": "mul"}, opset=16)
    add("neg_idx_i64", "ScatterND", [("x", ints(3, 2)), ("i", np.array([[-1]], np.int64)), ("u", ints(1, 2))],
        opset=13)


def generators():
    def const_tensor(arr):
        return helper.make_tensor("v", {np.float32: TensorProto.FLOAT, np.int64: TensorProto.INT64}[arr.dtype.type],
                                  arr.shape, arr.flatten().tolist())
    add("tensor_f32", "Constant", [], {"value": const_tensor(randn(2, 3))}, opset=13)
    add("tensor_i64_scalar", "Constant", [], {"value": const_tensor(i64(7).reshape(()))}, opset=9)
    add("value_float", "Constant", [], {"value_float": 2.5}, opset=13)
    add("value_floats", "Constant", [], {"value_floats": [1.0, -2.0, 3.5]}, opset=13)
    add("value_int", "Constant", [], {"value_int": -4}, opset=13)
    add("value_ints", "Constant", [], {"value_ints": [3, 1, 4]}, opset=12)
    add("default", "ConstantOfShape", [("s", i64(2, 3))], opset=9, consts=["s"])
    add("f32_value", "ConstantOfShape", [("s", i64(3))],
        {"value": helper.make_tensor("v", TensorProto.FLOAT, [1], [1.25])}, opset=9)
    add("i64_value", "ConstantOfShape", [("s", i64(2, 1, 2))],
        {"value": helper.make_tensor("v", TensorProto.INT64, [1], [-7])}, opset=9, consts=["s"])
    add("scalar_shape", "ConstantOfShape", [("s", np.zeros(0, np.int64))],
        {"value": helper.make_tensor("v", TensorProto.INT32, [1], [3])}, opset=9, consts=["s"])
    add("empty", "ConstantOfShape", [("s", i64(0, 3))], opset=9)
    add("f32", "Range", [("a", scalar(0.5, np.float32)), ("b", scalar(3.7, np.float32)),
                         ("d", scalar(0.6, np.float32))], opset=11)
    add("i64_neg_delta", "Range", [("a", scalar(10, np.int64)), ("b", scalar(-3, np.int64)),
                                   ("d", scalar(-3, np.int64))], opset=11)
    add("i32_const", "Range", [("a", scalar(1, np.int32)), ("b", scalar(9, np.int32)),
                               ("d", scalar(2, np.int32))], opset=11, consts=["a", "b", "d"])
    add("empty", "Range", [("a", scalar(5, np.int64)), ("b", scalar(1, np.int64)),
                           ("d", scalar(1, np.int64))], opset=11)
    add("default", "EyeLike", [("x", randn(3, 4))], opset=9)
    add("k1_i64", "EyeLike", [("x", randn(4, 3))], {"k": 1, "dtype": TensorProto.INT64}, opset=9)
    add("k_neg2", "EyeLike", [("x", ints(4, 4))], {"k": -2}, opset=9)
    add("k_out_of_range", "EyeLike", [("x", randn(2, 3))], {"k": 5}, opset=9)
    add("default", "OneHot", [("i", i64(0, 2, 1)), ("d", scalar(4, np.int64)), ("v", np.array([0, 1], np.float32))],
        opset=11, consts=["d"])
    add("axis0_neg_idx", "OneHot", [("i", np.array([[1, -1], [0, 2]], np.int64)), ("d", scalar(3, np.int64)),
                                    ("v", np.array([-1, 5], np.float32))], {"axis": 0}, opset=11, consts=["d"])
    add("f32_depth_i32_idx", "OneHot", [("i", np.array([3, 0], np.int32)), ("d", scalar(4.0, np.float32)),
                                        ("v", np.array([0, 9], np.float32))], opset=11, consts=["d"])
    add("i64_values", "OneHot", [("i", i64(1, 0, 2)), ("d", scalar(3, np.int64)), ("v", i64(-1, 4))],
        {"axis": -2}, opset=11, consts=["d"])
    add("out_of_range", "OneHot", [("i", i64(5, 1, -7)), ("d", scalar(3, np.int64)),
                                   ("v", np.array([0, 1], np.float32))], opset=9, consts=["d"])


def misc():
    add("f32", "Identity", [("x", randn(2, 3))], opset=13)
    add("i64_scalar", "Identity", [("x", scalar(3, np.int64))], opset=7)
    add("bool_empty", "Identity", [("x", bools(0, 2))], opset=16)
    add("op13_identity", "Dropout", [("x", randn(3, 4))], opset=13)
    add("op13_mask", "Dropout", [("x", randn(3, 4))], opset=13, outs=2)
    add("op12_ratio_input", "Dropout", [("x", randn(5)), ("r", scalar(0.5, np.float32))], opset=12)
    # Before opset 12 the inference-mode mask is unspecified (ORT returns all false, the
    # opset 12 rule is all true), so the opset 10 case checks only the data output.
    add("op10_ratio_attr", "Dropout", [("x", randn(2, 2))], {"ratio": 0.3}, opset=10)
    add("op7", "Dropout", [("x", randn(4))], opset=7)
    add("f32", "Shape", [("x", randn(2, 3, 4))], opset=13)
    add("scalar", "Shape", [("x", scalar(1, np.float32))], opset=13)
    add("start", "Shape", [("x", randn(2, 3, 4))], {"start": 1}, opset=15)
    add("start_end_neg", "Shape", [("x", randn(2, 3, 4, 5))], {"start": -3, "end": -1}, opset=15)
    add("end_clamped", "Shape", [("x", randn(2, 3))], {"end": 10}, opset=15)
    add("f32", "Size", [("x", randn(2, 3, 4))], opset=13)
    add("scalar", "Size", [("x", scalar(1, np.int64))], opset=13)
    add("empty", "Size", [("x", bools(3, 0))], opset=7)
    add("f32", "NonZero", [("x", np.where(bools(3, 4), randn(3, 4), 0).astype(np.float32))], opset=13)
    add("i64_1d", "NonZero", [("x", ints(9, lo=-1, hi=1))], opset=9)
    add("bool_3d", "NonZero", [("x", bools(2, 2, 3))], opset=13)
    add("all_zero", "NonZero", [("x", np.zeros((2, 3), np.float32))], opset=13)


def resize():
    x = randn(1, 2, 3, 4)
    scales = np.array([1, 1, 2, 1.5], np.float32)
    add("op10_nearest", "Resize", [("x", x), ("sc", scales)], opset=10, consts=["sc"])
    add("op10_linear", "Resize", [("x", randn(1, 1, 2, 3)), ("sc", np.array([1, 1, 2, 2], np.float32))],
        {"mode": "linear"}, opset=10, consts=["sc"])
    add("op10_downsample", "Resize", [("x", randn(1, 1, 4, 6)), ("sc", np.array([1, 1, 0.5, 0.5], np.float32))],
        opset=10, consts=["sc"])
    roi_empty = np.zeros(0, np.float32)
    base = {"x": randn(1, 1, 3, 4)}
    for ctm in ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric"]:
        add(f"op13_linear_{ctm}", "Resize", [("x", base["x"]), None, ("sc", np.array([1, 1, 2, 1.5], np.float32))],
            {"mode": "linear", "coordinate_transformation_mode": ctm}, opset=13, consts=["sc"])
    for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        add(f"op13_nearest_{nm}", "Resize", [("x", randn(1, 1, 2, 3)), None,
                                             ("sc", np.array([1, 1, 2.5, 1.5], np.float32))],
            {"mode": "nearest", "nearest_mode": nm}, opset=13, consts=["sc"])
    add("op13_cubic", "Resize", [("x", randn(1, 1, 4, 4)), None, ("sc", np.array([1, 1, 2, 2], np.float32))],
        {"mode": "cubic"}, opset=13, consts=["sc"])
    add("op13_cubic_exclude", "Resize", [("x", randn(1, 1, 4, 4)), None,
                                         ("sc", np.array([1, 1, 1.5, 1.5], np.float32))],
        {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1}, opset=13, consts=["sc"])
    add("op13_sizes_linear", "Resize", [("x", randn(1, 2, 3, 3)), None, None, ("sz", i64(1, 2, 5, 7))],
        {"mode": "linear"}, opset=13, consts=["sz"])
    add("op13_sizes_nearest_down", "Resize", [("x", randn(1, 1, 5, 5)), None, None, ("sz", i64(1, 1, 2, 3))],
        opset=13, consts=["sz"])
    add("op11_roi_empty", "Resize", [("x", randn(1, 1, 2, 2)), ("roi", roi_empty),
                                     ("sc", np.array([1, 1, 3, 3], np.float32))],
        {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, opset=11, consts=["roi", "sc"])
    add("op11_tf_crop", "Resize", [("x", randn(1, 1, 4, 4)), ("roi", np.array([0, 0, 0.2, 0.1, 1, 1, 0.8, 0.9],
                                                                                np.float32)),
                                   ("sc", np.array([1, 1, 1.5, 1.5], np.float32))],
        {"mode": "linear", "coordinate_transformation_mode": "tf_crop_and_resize", "extrapolation_value": -1.0},
        opset=11, consts=["roi", "sc"])
    add("op13_3d_linear", "Resize", [("x", randn(2, 3, 4)), None, ("sc", np.array([1, 1, 2], np.float32))],
        {"mode": "linear"}, opset=13, consts=["sc"])
    add("op7_nearest", "Upsample", [("x", randn(1, 1, 2, 3))], {"scales": [1.0, 1.0, 2.0, 3.0]}, opset=7)
    add("op7_linear", "Upsample", [("x", randn(1, 1, 2, 2))], {"scales": [1.0, 1.0, 2.0, 2.0], "mode": "linear"},
        opset=7)
    add("op9_nearest", "Upsample", [("x", randn(1, 2, 2, 2)), ("sc", np.array([1, 1, 2, 2], np.float32))],
        opset=9, consts=["sc"])
    add("op9_linear_scales_input", "Upsample", [("x", randn(2, 3)), ("sc", np.array([2, 2], np.float32))],
        {"mode": "linear"}, opset=9)
    add("op9_i32_nearest", "Upsample", [("x", ints(1, 1, 2, 2, dtype=np.int32)), ("sc", np.array([1, 1, 2, 3], np.float32))],
        opset=9, consts=["sc"])


def generate():
    concat_split()
    reshape_like()
    transpose_like()
    expand_tile_pad()
    slice_cases()
    gather_scatter()
    generators()
    misc()
    resize()
