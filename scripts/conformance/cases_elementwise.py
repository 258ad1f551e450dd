"""Cases for ops/elementwise: unary math, activations, binary arithmetic, logic, casts."""
import numpy as np

from cases_common import add, bools, f32, i64, ints, randn, scalar

# Unary float ops: (op, input maker) with inputs inside each op's domain.
UNARY = [
    ("Abs", lambda *s: randn(*s)),
    ("Acos", lambda *s: f32(*s, lo=-0.99, hi=0.99)),
    ("Acosh", lambda *s: f32(*s, lo=1.01, hi=5.0)),
    ("Asin", lambda *s: f32(*s, lo=-0.99, hi=0.99)),
    ("Asinh", lambda *s: randn(*s, scale=3)),
    ("Atan", lambda *s: randn(*s, scale=3)),
    ("Atanh", lambda *s: f32(*s, lo=-0.95, hi=0.95)),
    ("Ceil", lambda *s: randn(*s, scale=4)),
    ("Cos", lambda *s: randn(*s, scale=3)),
    ("Cosh", lambda *s: randn(*s, scale=2)),
    ("Erf", lambda *s: randn(*s, scale=2)),
    ("Exp", lambda *s: randn(*s, scale=3)),
    ("Floor", lambda *s: randn(*s, scale=4)),
    ("Log", lambda *s: f32(*s, lo=0.01, hi=20.0)),
    ("Neg", lambda *s: randn(*s)),
    ("Reciprocal", lambda *s: np.where(RNG_SIGN(*s), 1, -1).astype(np.float32) * f32(*s, lo=0.1, hi=4)),
    ("Relu", lambda *s: randn(*s)),
    ("Sigmoid", lambda *s: randn(*s, scale=5)),
    ("Sign", lambda *s: np.round(randn(*s, scale=2))),
    ("Sin", lambda *s: randn(*s, scale=3)),
    ("Sinh", lambda *s: randn(*s, scale=2)),
    ("Softplus", lambda *s: randn(*s, scale=5)),
    ("Softsign", lambda *s: randn(*s, scale=3)),
    ("Sqrt", lambda *s: f32(*s, lo=0.0, hi=9.0)),
    ("Tan", lambda *s: f32(*s, lo=-1.4, hi=1.4)),
    ("Tanh", lambda *s: randn(*s, scale=3)),
]


def RNG_SIGN(*s):
    return bools(*s)


def unary():
    for op, make in UNARY:
        add("f32_3d", op, [("x", make(2, 3, 5))], opset=13)
        add("f32_scalar", op, [("x", make())], opset=13)
        add("f32_empty", op, [("x", make(0, 3))], opset=13)
    add("f32_opset7", "Abs", [("x", randn(7))], opset=7)
    add("f64", "Exp", [("x", randn(3, 4).astype(np.float64))], opset=13)
    add("f64", "Sqrt", [("x", f32(6, lo=0, hi=4).astype(np.float64))], opset=13)
    add("f16", "Relu", [("x", randn(4, 3).astype(np.float16))], opset=14)
    add("f16", "Abs", [("x", randn(9).astype(np.float16))], opset=13)
    for dt in (np.int8, np.int32, np.int64):
        add(f"{np.dtype(dt).name}", "Abs", [("x", ints(3, 4, lo=-100, hi=100, dtype=dt))], opset=13)
        add(f"{np.dtype(dt).name}", "Neg", [("x", ints(3, 4, lo=-100, hi=100, dtype=dt))], opset=13)
    add("i32", "Sign", [("x", ints(11, lo=-3, hi=3, dtype=np.int32))], opset=13)
    add("i64", "Sign", [("x", ints(11, lo=-3, hi=3))], opset=13)
    add("i32", "Relu", [("x", ints(2, 5, dtype=np.int32))], opset=14)
    add("i8", "Relu", [("x", ints(2, 5, dtype=np.int8))], opset=14)
    # Round: halves go to even.
    add("halves", "Round", [("x", np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49, -0.51, 3.7],
                                           np.float32))], opset=11)
    add("rand", "Round", [("x", randn(3, 7, scale=5))], opset=11)
    add("special", "Floor", [("x", np.array([-0.0, 1e-8, -1e-8, 1e30, -1e30], np.float32))])
    add("bool", "Not", [("x", bools(3, 4))], opset=7)
    add("bool_scalar", "Not", [("x", np.array(True))], opset=7)
    nonfinite = np.array([np.inf, -np.inf, np.nan, 0.0, -1.5, 3e38], np.float32)
    add("f32", "IsNaN", [("x", nonfinite)], opset=13)
    add("f32_2d", "IsNaN", [("x", np.where(bools(3, 4), np.nan, 1.0).astype(np.float32))], opset=9)
    add("default", "IsInf", [("x", nonfinite)], opset=10)
    add("pos_only", "IsInf", [("x", nonfinite)], {"detect_negative": 0}, opset=10)
    add("neg_only", "IsInf", [("x", nonfinite)], {"detect_positive": 0}, opset=10)
    add("f64", "IsInf", [("x", nonfinite.astype(np.float64))], opset=10)


def activations():
    x = lambda: randn(2, 3, 4, scale=3)  # noqa: E731
    add("default", "Celu", [("x", x())], opset=12)
    add("alpha", "Celu", [("x", x())], {"alpha": 0.5}, opset=12)
    add("default", "Elu", [("x", x())], opset=7)
    add("alpha", "Elu", [("x", x())], {"alpha": 0.3}, opset=7)
    add("default", "HardSigmoid", [("x", x())], opset=7)
    add("alpha_beta", "HardSigmoid", [("x", x())], {"alpha": 0.4, "beta": 0.3}, opset=7)
    add("default", "HardSwish", [("x", x())], opset=14)
    add("wide", "HardSwish", [("x", randn(17, scale=6))], opset=14)
    add("default", "LeakyRelu", [("x", x())], opset=7)
    add("alpha", "LeakyRelu", [("x", x())], {"alpha": 0.2}, opset=16)
    add("default", "Selu", [("x", x())], opset=7)
    add("alpha_gamma", "Selu", [("x", x())], {"alpha": 2.0, "gamma": 3.0}, opset=7)
    add("default", "ThresholdedRelu", [("x", x())], opset=10)
    add("alpha", "ThresholdedRelu", [("x", x())], {"alpha": 2.0}, opset=10)
    add("default", "Softplus", [("x", randn(1, 1, 3))], opset=7)
    # Mish and Gelu: written at opset 17 for kiln, 18/20 for ORT (see NEWER_OPS).
    add("default", "Mish", [("x", x())], opset=17)
    add("empty", "Mish", [("x", randn(0))], opset=17)
    add("default", "Gelu", [("x", x())], opset=17)
    add("tanh", "Gelu", [("x", x())], {"approximate": "tanh"}, opset=17)
    add("wide", "Gelu", [("x", randn(3, 7, scale=6))], {"approximate": "none"}, opset=17)
    # PRelu: slope broadcast (unidirectional) from a per-channel or scalar slope.
    add("channel", "PRelu", [("x", randn(2, 3, 4, 4)), ("slope", f32(3, 1, 1, lo=0, hi=0.5))], opset=9)
    add("scalar_slope", "PRelu", [("x", randn(3, 5)), ("slope", f32(1, lo=0, hi=0.5))], opset=9)
    add("same_shape", "PRelu", [("x", randn(3, 5)), ("slope", f32(3, 5))], opset=16)
    add("last_dim", "PRelu", [("x", randn(2, 4, 5)), ("slope", f32(5))], opset=7)
    add("const_slope", "PRelu", [("x", randn(1, 3, 2, 2)), ("slope", f32(3, 1, 1))], opset=9,
        consts=["slope"])


ARITH = ["Add", "Sub", "Mul", "Div"]


def arithmetic():
    for op in ARITH:
        b = (lambda *s: f32(*s, lo=0.5, hi=3.0)) if op == "Div" else randn
        add("same", op, [("a", randn(2, 3, 4)), ("b", b(2, 3, 4))], opset=14)
        add("bcast_row", op, [("a", randn(3, 4)), ("b", b(4))], opset=14)
        add("bcast_both", op, [("a", randn(2, 1, 4)), ("b", b(3, 1))], opset=14)
        add("scalar", op, [("a", randn(5)), ("b", b())], opset=14)
        add("bcast_opset7", op, [("a", randn(1, 3, 1)), ("b", b(2, 1, 5))], opset=7)
        add("empty", op, [("a", randn(0, 4)), ("b", b(1, 4))], opset=14)
        ib = ints(3, 4, lo=1, hi=9) * np.where(bools(3, 4), 1, -1) if op == "Div" else ints(3, 4)
        add("i64", op, [("a", ints(3, 4, lo=-50, hi=50)), ("b", ib)], opset=14)
        ib32 = ints(4, lo=1, hi=7, dtype=np.int32) if op == "Div" else ints(4, dtype=np.int32)
        add("i32_bcast", op, [("a", ints(2, 4, lo=-50, hi=50, dtype=np.int32)), ("b", ib32)], opset=13)
        add("f64", op, [("a", randn(3).astype(np.float64)), ("b", b(3).astype(np.float64))], opset=14)
    add("u8", "Add", [("a", ints(6, lo=0, hi=200, dtype=np.uint8)), ("b", ints(6, lo=0, hi=100, dtype=np.uint8))],
        opset=14)
    add("f16", "Mul", [("a", randn(5).astype(np.float16)), ("b", randn(5).astype(np.float16))], opset=14)
    # Pow: float base and exponent; float base with integer exponent (opset 12+).
    add("f32", "Pow", [("a", f32(3, 4, lo=0.1, hi=3)), ("b", f32(3, 4, lo=-2, hi=2))], opset=13)
    add("bcast", "Pow", [("a", f32(2, 3, lo=0.1, hi=3)), ("b", np.array(2.0, np.float32))], opset=7)
    add("neg_base_int_exp", "Pow", [("a", randn(6)), ("b", np.array([0, 1, 2, 3, -1, 2], np.float32))], opset=13)
    add("f32_i64exp", "Pow", [("a", randn(2, 3)), ("b", ints(3, lo=0, hi=3))], opset=13)
    add("i64", "Pow", [("a", ints(5, lo=-4, hi=4)), ("b", ints(5, lo=0, hi=4))], opset=15)
    # Mod: integer mod takes the divisor's sign; fmod=1 takes the dividend's.
    sgn = lambda *s: np.where(bools(*s), 1, -1)  # noqa: E731
    add("i64", "Mod", [("a", ints(4, 5, lo=-30, hi=30)), ("b", ints(4, 5, lo=1, hi=7) * sgn(4, 5))], opset=13)
    add("i32_bcast", "Mod", [("a", ints(3, 4, lo=-30, hi=30, dtype=np.int32)),
                             ("b", np.array([3, -4, 5, 7], np.int32))], opset=10)
    add("fmod_f32", "Mod", [("a", randn(3, 4, scale=5)), ("b", (f32(4, lo=0.5, hi=2) * sgn(4)).astype(np.float32))],
        {"fmod": 1}, opset=13)
    add("fmod_i64", "Mod", [("a", ints(6, lo=-30, hi=30)), ("b", i64(3, -3, 4, -4, 5, 7))], {"fmod": 1}, opset=13)


def variadic():
    for op in ["Max", "Min", "Mean", "Sum"]:
        add("one", op, [("a", randn(3, 4))], opset=13)
        add("two_bcast", op, [("a", randn(3, 1)), ("b", randn(1, 4))], opset=13)
        add("three", op, [("a", randn(2, 3)), ("b", randn(3)), ("c", randn(2, 1))], opset=13)
        add("opset7", op, [("a", randn(2, 3)), ("b", randn(2, 3))], opset=7)
    for op in ["Max", "Min"]:
        add("i64", op, [("a", ints(5)), ("b", ints(5))], opset=13)
        add("i32_bcast", op, [("a", ints(2, 3, dtype=np.int32)), ("b", ints(3, dtype=np.int32))], opset=13)
        add("nan", op, [("a", np.array([np.nan, 1, 2], np.float32)), ("b", np.array([0, np.nan, 3], np.float32))],
            opset=13)


def comparison():
    for op in ["Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual"]:
        # Integer-valued floats so that equal pairs actually occur.
        add("f32", op, [("a", np.round(randn(3, 4, scale=2))), ("b", np.round(randn(3, 4, scale=2)))], opset=16)
        add("bcast", op, [("a", np.round(randn(2, 1, 4))), ("b", np.round(randn(3, 1)))], opset=16)
        add("i64", op, [("a", ints(7, lo=-3, hi=3)), ("b", ints(7, lo=-3, hi=3))], opset=16)
        add("i32", op, [("a", ints(2, 3, lo=-3, hi=3, dtype=np.int32)), ("b", ints(3, lo=-3, hi=3, dtype=np.int32))],
            opset=13)
    add("opset7", "Greater", [("a", randn(3)), ("b", randn(3))], opset=7)
    add("opset7", "Less", [("a", randn(3)), ("b", randn(3))], opset=7)
    add("bool", "Equal", [("a", bools(6)), ("b", bools(6))], opset=13)
    for op in ["And", "Or", "Xor"]:
        add("same", op, [("a", bools(3, 4)), ("b", bools(3, 4))], opset=7)
        add("bcast", op, [("a", bools(2, 1, 4)), ("b", bools(3, 1))], opset=7)
        add("scalar", op, [("a", bools(5)), ("b", np.array(True))], opset=7)


def bitshift():
    for dt, hi in ((np.uint8, 8), (np.uint32, 32), (np.uint64, 64)):
        nm = np.dtype(dt).name
        x = ints(3, 4, lo=0, hi=min(np.iinfo(dt).max, 2**40), dtype=dt)
        s = ints(4, lo=0, hi=hi - 1, dtype=dt)
        add(f"left_{nm}", "BitShift", [("x", x), ("s", s)], {"direction": "LEFT"}, opset=11)
        add(f"right_{nm}", "BitShift", [("x", x), ("s", s)], {"direction": "RIGHT"}, opset=11)


def clip():
    x = lambda: randn(3, 5, scale=3)  # noqa: E731
    add("opset7_attrs", "Clip", [("x", x())], {"min": -1.0, "max": 2.0}, opset=7)
    add("opset7_default", "Clip", [("x", x())], opset=7)
    add("opset11_both", "Clip", [("x", x()), ("lo", scalar(-0.5, np.float32)), ("hi", scalar(1.5, np.float32))],
        opset=11)
    add("opset11_min_only", "Clip", [("x", x()), ("lo", scalar(0.0, np.float32))], opset=11)
    add("opset11_max_only", "Clip", [("x", x()), None, ("hi", scalar(0.5, np.float32))], opset=11)
    add("opset11_none", "Clip", [("x", x())], opset=11)
    add("opset13_const", "Clip", [("x", x()), ("lo", scalar(-1, np.float32)), ("hi", scalar(1, np.float32))],
        opset=13, consts=["lo", "hi"])
    add("opset13_i64", "Clip", [("x", ints(9, lo=-20, hi=20)), ("lo", scalar(-5, np.int64)),
                                ("hi", scalar(7, np.int64))], opset=13)
    add("opset13_i32", "Clip", [("x", ints(9, lo=-20, hi=20, dtype=np.int32)), ("lo", scalar(-5, np.int32))],
        opset=13)
    add("min_gt_max", "Clip", [("x", x()), ("lo", scalar(1.0, np.float32)), ("hi", scalar(-1.0, np.float32))],
        opset=13)


def where():
    add("same", "Where", [("c", bools(3, 4)), ("a", randn(3, 4)), ("b", randn(3, 4))], opset=9)
    add("bcast", "Where", [("c", bools(3, 1)), ("a", randn(1, 4)), ("b", randn(2, 1, 1))], opset=16)
    add("scalar_b", "Where", [("c", bools(5)), ("a", randn(5)), ("b", scalar(0, np.float32))], opset=16)
    add("i64", "Where", [("c", bools(2, 3)), ("a", ints(2, 3)), ("b", ints(3))], opset=16)
    add("u8", "Where", [("c", bools(4)), ("a", ints(4, lo=0, hi=255, dtype=np.uint8)), ("b", ints(1, lo=0, hi=9, dtype=np.uint8))],
        opset=16)


CAST_PAIRS = [  # (from maker, to name, onnx to type)
    ("f32_to_i32", lambda: randn(3, 4, scale=20), 6),
    ("f32_to_i64", lambda: randn(3, 4, scale=20), 7),
    ("f32_to_f64", lambda: randn(5), 11),
    ("f32_to_f16", lambda: randn(2, 5, scale=100), 10),
    ("f16_to_f32", lambda: randn(2, 5).astype(np.float16), 1),
    ("f32_to_bool", lambda: np.array([0, -0.0, 1.5, -2, 0.1, np.nan], np.float32), 9),
    ("bool_to_f32", lambda: bools(7), 1),
    ("bool_to_i64", lambda: bools(7), 7),
    ("i64_to_f32", lambda: ints(6, lo=-1000, hi=1000), 1),
    ("i64_to_i32", lambda: ints(6, lo=-1000, hi=1000), 6),
    ("i32_to_i64", lambda: ints(6, lo=-1000, hi=1000, dtype=np.int32), 7),
    ("u8_to_f32", lambda: ints(6, lo=0, hi=255, dtype=np.uint8), 1),
    ("i8_to_f32", lambda: ints(6, lo=-128, hi=127, dtype=np.int8), 1),
    ("f32_to_u8", lambda: f32(8, lo=0, hi=255), 2),
    ("f32_to_i8", lambda: f32(8, lo=-127, hi=127), 3),
    ("i32_to_bool", lambda: ints(6, lo=-2, hi=2, dtype=np.int32), 9),
    ("f64_to_f32", lambda: randn(4).astype(np.float64) / 3, 1),
    ("f32_to_f32", lambda: randn(3), 1),
]


def casts():
    for name, make, to in CAST_PAIRS:
        add(name, "Cast", [("x", make())], {"to": to}, opset=13)
    add("opset9_empty", "Cast", [("x", randn(0, 2))], {"to": 7}, opset=9)
    add("f32_to_i64", "CastLike", [("x", randn(3, 4, scale=20)), ("like", ints(1))], opset=15)
    add("i32_to_f32", "CastLike", [("x", ints(5, dtype=np.int32)), ("like", randn(2))], opset=15)
    add("f32_to_bool", "CastLike", [("x", np.array([0, 2, -1], np.float32)), ("like", bools(1))], opset=15)
    add("f32_to_f16", "CastLike", [("x", randn(5)), ("like", randn(1).astype(np.float16))], opset=15)


def generate():
    unary()
    activations()
    arithmetic()
    variadic()
    comparison()
    bitshift()
    clip()
    where()
    casts()
