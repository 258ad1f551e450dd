"""Cases for ops/reduce: reductions, normalised exponentials, index selection."""
import numpy as np

from cases_common import LOOSE, add, f32, i64, ints, randn, scalar

REDUCE = ["ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean",
          "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare"]


def _x(op, *shape):
    # ReduceLogSum needs a positive sum; ReduceProd stays near 1 so products stay O(1).
    if op == "ReduceLogSum":
        return f32(*shape, lo=0.1, hi=2)
    if op == "ReduceProd":
        return f32(*shape, lo=0.5, hi=1.5)
    return randn(*shape)


def reductions():
    for op in REDUCE:
        # Up to opset 17 every reduce except ReduceSum takes axes as an attribute.
        attr_opset = 11 if op == "ReduceSum" else 13
        add("all_keep", op, [("x", _x(op, 2, 3, 4))], opset=attr_opset)
        add("axis1", op, [("x", _x(op, 2, 3, 4))], {"axes": [1]}, opset=attr_opset)
        add("axes_neg_nokeep", op, [("x", _x(op, 2, 3, 4))], {"axes": [-1, 0], "keepdims": 0}, opset=attr_opset)
        add("all_nokeep", op, [("x", _x(op, 3, 5))], {"keepdims": 0}, opset=attr_opset)
        add("odd_1d", op, [("x", _x(op, 7))], {"axes": [0]}, opset=attr_opset)
        add("opset11", op, [("x", _x(op, 2, 1, 3))], {"axes": [1, 2]}, opset=11)
    for op in ["ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd"]:
        add("i64", op, [("x", ints(3, 4, lo=-4, hi=4))], {"axes": [1]} if op != "ReduceSum" else {}, opset=11)
        add("i32", op, [("x", ints(3, 4, lo=-4, hi=4, dtype=np.int32))], {"axes": [0], "keepdims": 0}, opset=11)
    # ReduceSum opset 13: axes is an input; empty axes with noop_with_empty_axes is identity.
    x = randn(2, 3, 4)
    add("op13_axes_const", "ReduceSum", [("x", x), ("axes", i64(0, 2))], opset=13, consts=["axes"])
    add("op13_axes_input", "ReduceSum", [("x", randn(2, 3, 4)), ("axes", i64(-2))], {"keepdims": 0}, opset=13)
    add("op13_no_axes", "ReduceSum", [("x", randn(2, 3, 4))], opset=13)
    add("op13_noop_empty", "ReduceSum", [("x", randn(2, 3)), ("axes", np.zeros(0, np.int64))],
        {"noop_with_empty_axes": 1}, opset=13, consts=["axes"])
    add("op13_noop_omitted", "ReduceSum", [("x", randn(2, 3))], {"noop_with_empty_axes": 1}, opset=13)
    add("op13_empty_axes_reduces_all", "ReduceSum", [("x", randn(2, 3)), ("axes", np.zeros(0, np.int64))],
        opset=13, consts=["axes"])
    add("empty_reduced_axis", "ReduceSum", [("x", randn(2, 0, 3)), ("axes", i64(1))], opset=13, consts=["axes"])
    add("empty_kept_axis", "ReduceMax", [("x", randn(0, 3))], {"axes": [1]}, opset=13)
    add("empty_reduced_axis", "ReduceProd", [("x", randn(2, 0))], {"axes": [1]}, opset=13)
    add("big_mean", "ReduceMean", [("x", randn(4, 257))], {"axes": [1]}, opset=13, **LOOSE)


def argminmax():
    for op in ["ArgMax", "ArgMin"]:
        add("default", op, [("x", randn(3, 4))], opset=13)
        add("axis_last_nokeep", op, [("x", randn(2, 3, 5))], {"axis": -1, "keepdims": 0}, opset=13)
        ties = np.array([[1, 3, 3, 0], [2, 2, 1, 1], [5, 5, 5, 5]], np.float32)
        add("ties_first", op, [("x", ties)], {"axis": 1}, opset=12)
        add("ties_last", op, [("x", ties)], {"axis": 1, "select_last_index": 1}, opset=12)
        add("i64", op, [("x", ints(4, 3, lo=-3, hi=3))], {"axis": 0}, opset=11)
        add("i32", op, [("x", ints(4, 3, lo=-3, hi=3, dtype=np.int32))], {"axis": 1, "keepdims": 0}, opset=13)
        add("opset7", op, [("x", randn(5, 2))], {"axis": 0}, opset=7)
        add("size1_axis", op, [("x", randn(3, 1))], {"axis": 1}, opset=13)


def cumsum():
    x = randn(3, 4)
    add("axis0", "CumSum", [("x", x), ("axis", scalar(0, np.int64))], opset=14, consts=["axis"])
    add("axis1", "CumSum", [("x", randn(3, 4)), ("axis", scalar(1, np.int32))], opset=11)
    add("neg_axis", "CumSum", [("x", randn(2, 3, 4)), ("axis", scalar(-1, np.int64))], opset=11)
    add("exclusive", "CumSum", [("x", randn(5)), ("axis", scalar(0, np.int64))], {"exclusive": 1}, opset=11)
    add("reverse", "CumSum", [("x", randn(2, 5)), ("axis", scalar(1, np.int64))], {"reverse": 1}, opset=11)
    add("excl_rev", "CumSum", [("x", randn(2, 5)), ("axis", scalar(1, np.int64))],
        {"reverse": 1, "exclusive": 1}, opset=11)
    add("i64", "CumSum", [("x", ints(6)), ("axis", scalar(0, np.int64))], opset=11)
    add("i32", "CumSum", [("x", ints(2, 3, dtype=np.int32)), ("axis", scalar(1, np.int64))], opset=11)


def softmaxes():
    for op in ["Softmax", "LogSoftmax", "Hardmax"]:
        make = (lambda *s: np.round(randn(*s, scale=2))) if op == "Hardmax" else randn
        # opset < 13: coerce to 2D at `axis` (default 1); opset 13: along `axis` (default -1).
        add("op11_default", op, [("x", make(2, 3, 4))], opset=11)
        add("op11_axis2", op, [("x", make(2, 3, 4))], {"axis": 2}, opset=11)
        add("op11_axis0", op, [("x", make(2, 3))], {"axis": 0}, opset=11)
        add("op13_default", op, [("x", make(2, 3, 4))], opset=13)
        add("op13_axis1", op, [("x", make(2, 3, 4))], {"axis": 1}, opset=13)
        add("op13_axis_neg3", op, [("x", make(2, 3, 4))], {"axis": -3}, opset=13)
        add("op13_1d", op, [("x", make(7))], opset=13)
        add("op7_2d", op, [("x", make(3, 5))], opset=7)
    add("large_values", "Softmax", [("x", randn(2, 6, scale=50))], opset=13)
    add("large_values", "LogSoftmax", [("x", randn(2, 6, scale=50))], opset=13)
    add("f64", "Softmax", [("x", randn(2, 3).astype(np.float64))], opset=13)
    add("ties", "Hardmax", [("x", np.array([[1, 3, 3], [2, 2, 2]], np.float32))], opset=13)


def topk():
    x = randn(3, 6)
    add("op7_attr_k", "TopK", [("x", x)], {"k": 2}, opset=7, outs=2)
    add("op10_k_input", "TopK", [("x", randn(3, 6)), ("k", i64(3))], opset=10, outs=2)
    add("op11_smallest", "TopK", [("x", randn(4, 5)), ("k", i64(2))], {"largest": 0}, opset=11, outs=2)
    add("op11_axis0", "TopK", [("x", randn(5, 3)), ("k", i64(4))], {"axis": 0}, opset=11, outs=2)
    add("op11_k_all", "TopK", [("x", randn(2, 3, 4)), ("k", i64(4))], {"axis": -1}, opset=11, outs=2)
    add("op11_k0", "TopK", [("x", randn(2, 4)), ("k", i64(0))], opset=11, outs=2)
    add("op11_const_k", "TopK", [("x", randn(2, 7)), ("k", i64(3))], opset=11, outs=2, consts=["k"])
    ties = np.array([[1, 3, 3, 2, 3], [0, 0, 0, 0, 0]], np.float32)
    add("op11_ties_lower_index_first", "TopK", [("x", ties), ("k", i64(3))], opset=11, outs=2)
    add("op11_i64", "TopK", [("x", np.arange(12, dtype=np.int64)[::-1].reshape(3, 4) * 3 % 11), ("k", i64(2))],
        opset=11, outs=2)
    add("op11_i32_smallest", "TopK", [("x", np.array([[5, 1, 9, 3], [4, 8, 2, 7]], np.int32)), ("k", i64(2))],
        {"largest": 0}, opset=11, outs=2)


def generate():
    reductions()
    argminmax()
    cumsum()
    softmaxes()
    topk()
