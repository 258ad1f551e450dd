"""Cases for ops/nn: conv, pooling, normalisation, matmul, recurrent."""
import numpy as np

from cases_common import LOOSE, add, f32, ints, randn


def conv():
    x = randn(1, 3, 7, 7)
    w = randn(4, 3, 3, 3, scale=0.3)
    add("basic", "Conv", [("x", x), ("w", w)], opset=11, **LOOSE)
    add("bias_pads", "Conv", [("x", randn(2, 3, 5, 6)), ("w", randn(4, 3, 3, 3, scale=0.3)), ("b", randn(4))],
        {"pads": [1, 1, 1, 1]}, opset=11, consts=["w", "b"], **LOOSE)
    add("stride_asym_pads", "Conv", [("x", randn(1, 2, 8, 7)), ("w", randn(3, 2, 3, 2, scale=0.3))],
        {"strides": [2, 3], "pads": [0, 1, 2, 1]}, opset=11, **LOOSE)
    add("dilation", "Conv", [("x", randn(1, 2, 9, 9)), ("w", randn(2, 2, 3, 3, scale=0.3))],
        {"dilations": [2, 2], "pads": [2, 2, 2, 2]}, opset=11, **LOOSE)
    add("group2", "Conv", [("x", randn(1, 4, 5, 5)), ("w", randn(6, 2, 3, 3, scale=0.3))],
        {"group": 2}, opset=11, **LOOSE)
    add("depthwise", "Conv", [("x", randn(1, 3, 6, 6)), ("w", randn(3, 1, 3, 3, scale=0.3)), ("b", randn(3))],
        {"group": 3, "pads": [1, 1, 1, 1]}, opset=11, **LOOSE)
    add("same_upper", "Conv", [("x", randn(1, 2, 5, 6)), ("w", randn(2, 2, 2, 3, scale=0.3))],
        {"auto_pad": "SAME_UPPER", "strides": [2, 2]}, opset=11, **LOOSE)
    add("same_lower", "Conv", [("x", randn(1, 2, 5, 6)), ("w", randn(2, 2, 2, 2, scale=0.3))],
        {"auto_pad": "SAME_LOWER"}, opset=11, **LOOSE)
    add("valid", "Conv", [("x", randn(1, 1, 6, 5)), ("w", randn(2, 1, 3, 3, scale=0.3))],
        {"auto_pad": "VALID", "strides": [2, 1]}, opset=11, **LOOSE)
    add("conv1d", "Conv", [("x", randn(2, 3, 11)), ("w", randn(5, 3, 4, scale=0.3)), ("b", randn(5))],
        {"strides": [2], "pads": [1, 2]}, opset=11, **LOOSE)
    add("conv3d", "Conv", [("x", randn(1, 2, 4, 5, 3)), ("w", randn(2, 2, 2, 3, 2, scale=0.3))],
        {"pads": [0, 1, 1, 1, 0, 0]}, opset=11, **LOOSE)
    add("pointwise", "Conv", [("x", randn(1, 8, 3, 3)), ("w", randn(4, 8, 1, 1, scale=0.3))], opset=7, **LOOSE)
    add("kernel_shape_attr", "Conv", [("x", randn(1, 1, 4, 4)), ("w", randn(1, 1, 2, 2))],
        {"kernel_shape": [2, 2]}, opset=11, **LOOSE)


def conv_transpose():
    add("basic", "ConvTranspose", [("x", randn(1, 2, 3, 3)), ("w", randn(2, 3, 3, 3, scale=0.3))],
        opset=11, **LOOSE)
    add("stride2_bias", "ConvTranspose", [("x", randn(1, 2, 3, 4)), ("w", randn(2, 2, 3, 3, scale=0.3)),
                                          ("b", randn(2))], {"strides": [2, 2]}, opset=11, **LOOSE)
    add("pads_outpad", "ConvTranspose", [("x", randn(1, 1, 4, 4)), ("w", randn(1, 2, 3, 3, scale=0.3))],
        {"strides": [2, 2], "pads": [1, 1, 1, 1], "output_padding": [1, 1]}, opset=11, **LOOSE)
    add("output_shape", "ConvTranspose", [("x", randn(1, 1, 3, 3)), ("w", randn(1, 1, 3, 3, scale=0.3))],
        {"strides": [2, 2], "output_shape": [6, 7]}, opset=11, **LOOSE)
    add("group2", "ConvTranspose", [("x", randn(1, 4, 3, 3)), ("w", randn(4, 1, 2, 2, scale=0.3))],
        {"group": 2}, opset=11, **LOOSE)
    add("dilation", "ConvTranspose", [("x", randn(1, 1, 3, 3)), ("w", randn(1, 1, 2, 2, scale=0.3))],
        {"dilations": [2, 2]}, opset=11, **LOOSE)
    add("conv1d", "ConvTranspose", [("x", randn(2, 3, 5)), ("w", randn(3, 2, 3, scale=0.3))],
        {"strides": [3]}, opset=11, **LOOSE)
    add("same_upper", "ConvTranspose", [("x", randn(1, 1, 3, 3)), ("w", randn(1, 1, 3, 3, scale=0.3))],
        {"strides": [2, 2], "auto_pad": "SAME_UPPER"}, opset=11, **LOOSE)


def pooling():
    for op in ["AveragePool", "MaxPool"]:
        add("k2", op, [("x", randn(1, 2, 4, 4))], {"kernel_shape": [2, 2]}, opset=11)
        add("k3_s2_pads", op, [("x", randn(1, 1, 7, 6))],
            {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=11)
        add("ceil_mode", op, [("x", randn(1, 2, 6, 6))],
            {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1}, opset=11)
        add("same_upper", op, [("x", randn(1, 1, 5, 5))],
            {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"}, opset=11)
        add("same_lower", op, [("x", randn(1, 1, 5, 5))],
            {"kernel_shape": [3, 2], "auto_pad": "SAME_LOWER"}, opset=11)
        add("pool1d", op, [("x", randn(2, 3, 9))], {"kernel_shape": [3], "strides": [2]}, opset=11)
        add("pool3d", op, [("x", randn(1, 1, 4, 4, 4))], {"kernel_shape": [2, 2, 2]}, opset=11)
        add("opset7", op, [("x", randn(1, 1, 5, 5))], {"kernel_shape": [2, 2], "strides": [1, 2]}, opset=7)
    add("count_include_pad", "AveragePool", [("x", randn(1, 1, 5, 5))],
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, opset=11)
    add("count_include_pad_ceil", "AveragePool", [("x", randn(1, 1, 6, 6))],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1, "ceil_mode": 1},
        opset=11)
    add("dilations", "MaxPool", [("x", randn(1, 1, 7, 7))], {"kernel_shape": [2, 2], "dilations": [2, 2]}, opset=11)
    add("indices", "MaxPool", [("x", randn(2, 2, 4, 5))], {"kernel_shape": [2, 2], "strides": [2, 2]},
        opset=12, outs=2)
    add("indices_pads", "MaxPool", [("x", randn(1, 2, 5, 5))],
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, opset=12, outs=2)
    add("indices_col_major", "MaxPool", [("x", randn(1, 1, 4, 4))],
        {"kernel_shape": [2, 2], "storage_order": 1}, opset=12, outs=2)
    add("i8", "MaxPool", [("x", ints(1, 1, 4, 4, lo=-100, hi=100, dtype=np.int8))], {"kernel_shape": [2, 2]},
        opset=12)
    add("u8", "MaxPool", [("x", ints(1, 2, 5, 5, lo=0, hi=255, dtype=np.uint8))],
        {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}, opset=12)
    for op in ["GlobalAveragePool", "GlobalMaxPool"]:
        add("2d", op, [("x", randn(2, 3, 4, 5))], opset=7)
        add("1d", op, [("x", randn(1, 4, 7))], opset=7)
        add("3d", op, [("x", randn(1, 2, 2, 3, 2))], opset=7)
        add("1x1", op, [("x", randn(1, 3, 1, 1))], opset=7)


def normalization():
    def bn_inputs(c, *spatial):
        return [("x", randn(2, c, *spatial)), ("scale", f32(c, lo=0.5, hi=1.5)), ("bias", randn(c)),
                ("mean", randn(c, scale=0.2)), ("var", f32(c, lo=0.5, hi=2))]
    add("op15", "BatchNormalization", bn_inputs(3, 4, 4), opset=15)
    add("op15_eps", "BatchNormalization", bn_inputs(2, 5), {"epsilon": 0.1}, opset=15)
    add("op14_const", "BatchNormalization", bn_inputs(4, 2, 3), opset=14,
        consts=["scale", "bias", "mean", "var"])
    add("op9_2d", "BatchNormalization", bn_inputs(3), opset=9)
    add("op7_spatial", "BatchNormalization", bn_inputs(3, 2, 2), opset=7)

    add("basic", "InstanceNormalization", [("x", randn(2, 3, 4, 5)), ("s", f32(3, lo=0.5, hi=1.5)), ("b", randn(3))],
        opset=7)
    add("eps_1d", "InstanceNormalization", [("x", randn(1, 2, 7)), ("s", randn(2)), ("b", randn(2))],
        {"epsilon": 0.01}, opset=7)
    add("3d", "InstanceNormalization", [("x", randn(1, 2, 2, 3, 2)), ("s", randn(2)), ("b", randn(2))], opset=7)

    add("last_axis", "LayerNormalization", [("x", randn(2, 3, 8)), ("s", randn(8)), ("b", randn(8))], opset=17)
    add("axis1", "LayerNormalization", [("x", randn(2, 3, 4)), ("s", randn(3, 4)), ("b", randn(3, 4))],
        {"axis": 1}, opset=17)
    add("no_bias_eps", "LayerNormalization", [("x", randn(4, 5)), ("s", randn(5))], {"epsilon": 1e-3}, opset=17)
    add("mean_invstd", "LayerNormalization", [("x", randn(2, 3, 6)), ("s", randn(6)), ("b", randn(6))],
        opset=17, outs=3)
    add("axis_neg2_stats", "LayerNormalization", [("x", randn(2, 3, 4)), ("s", randn(3, 4))],
        {"axis": -2}, opset=17, outs=3)

    add("p2_axis_last", "LpNormalization", [("x", randn(3, 4))], opset=7)
    add("p1_axis0", "LpNormalization", [("x", randn(3, 4))], {"p": 1, "axis": 0}, opset=7)
    add("p2_3d", "LpNormalization", [("x", randn(2, 3, 4))], {"axis": 1}, opset=7)

    add("size3", "LRN", [("x", randn(1, 5, 3, 3))], {"size": 3}, opset=13)
    add("size3_attrs", "LRN", [("x", randn(2, 4, 2, 3))],
        {"size": 3, "alpha": 0.01, "beta": 0.5, "bias": 2.0}, opset=13)
    add("size5_op7", "LRN", [("x", randn(1, 7, 2, 2))], {"size": 5}, opset=7)


def matmul():
    add("2d", "MatMul", [("a", randn(3, 4)), ("b", randn(4, 5))], opset=13, **LOOSE)
    add("batched", "MatMul", [("a", randn(2, 3, 4)), ("b", randn(2, 4, 5))], opset=13, **LOOSE)
    add("bcast_batch", "MatMul", [("a", randn(2, 1, 3, 4)), ("b", randn(3, 4, 2))], opset=13, **LOOSE)
    add("vec_mat", "MatMul", [("a", randn(4)), ("b", randn(2, 4, 3))], opset=13, **LOOSE)
    add("mat_vec", "MatMul", [("a", randn(2, 3, 4)), ("b", randn(4))], opset=13, **LOOSE)
    add("vec_vec", "MatMul", [("a", randn(6)), ("b", randn(6))], opset=13, **LOOSE)
    add("k_large", "MatMul", [("a", randn(2, 300)), ("b", randn(300, 3))], opset=9, **LOOSE)
    add("const_weight", "MatMul", [("a", randn(3, 5)), ("b", randn(5, 2))], opset=13, consts=["b"], **LOOSE)
    add("empty_k", "MatMul", [("a", randn(2, 0)), ("b", randn(0, 3))], opset=13)
    add("i32", "MatMul", [("a", ints(2, 3, dtype=np.int32)), ("b", ints(3, 2, dtype=np.int32))], opset=13)
    add("i64", "MatMul", [("a", ints(2, 3)), ("b", ints(3, 4))], opset=13)
    add("f64", "MatMul", [("a", randn(2, 3).astype(np.float64)), ("b", randn(3, 2).astype(np.float64))], opset=13)


def gemm():
    add("basic", "Gemm", [("a", randn(3, 4)), ("b", randn(4, 5)), ("c", randn(3, 5))], opset=13, **LOOSE)
    add("transA_transB", "Gemm", [("a", randn(4, 3)), ("b", randn(5, 4)), ("c", randn(5))],
        {"transA": 1, "transB": 1}, opset=13, **LOOSE)
    add("alpha_beta", "Gemm", [("a", randn(2, 3)), ("b", randn(3, 4)), ("c", randn(2, 1))],
        {"alpha": 0.5, "beta": 2.0}, opset=13, **LOOSE)
    add("no_c", "Gemm", [("a", randn(3, 6)), ("b", randn(6, 2))], opset=13, **LOOSE)
    add("scalar_c", "Gemm", [("a", randn(2, 2)), ("b", randn(2, 3)), ("c", randn(1))], opset=11, **LOOSE)
    add("const_transB", "Gemm", [("a", randn(1, 8)), ("b", randn(4, 8)), ("c", randn(4))], {"transB": 1},
        opset=11, consts=["b", "c"], **LOOSE)
    add("opset7", "Gemm", [("a", randn(2, 3)), ("b", randn(3, 2)), ("c", randn(2, 2))], opset=7, **LOOSE)


def einsum():
    add("matmul", "Einsum", [("a", randn(3, 4)), ("b", randn(4, 5))], {"equation": "ij,jk->ik"}, opset=12, **LOOSE)
    add("batch_matmul", "Einsum", [("a", randn(2, 3, 4)), ("b", randn(2, 4, 5))],
        {"equation": "bij,bjk->bik"}, opset=12, **LOOSE)
    add("transpose", "Einsum", [("a", randn(2, 3, 4))], {"equation": "ijk->kji"}, opset=12)
    add("reduce_sum", "Einsum", [("a", randn(3, 4))], {"equation": "ij->i"}, opset=12, **LOOSE)
    add("implicit_output", "Einsum", [("a", randn(3, 4)), ("b", randn(4, 2))], {"equation": "ij,jk"},
        opset=12, **LOOSE)
    add("dot", "Einsum", [("a", randn(5)), ("b", randn(5))], {"equation": "i,i->"}, opset=12, **LOOSE)
    add("outer", "Einsum", [("a", randn(3)), ("b", randn(4))], {"equation": "i,j->ij"}, opset=12)
    add("ellipsis", "Einsum", [("a", randn(2, 3, 4)), ("b", randn(2, 4, 3))], {"equation": "...ij,...jk->...ik"},
        opset=12, **LOOSE)
    add("attention_like", "Einsum", [("q", randn(2, 3, 4)), ("k", randn(2, 5, 4))],
        {"equation": "bqd,bkd->bqk"}, opset=12, **LOOSE)
    add("diag_trace", "Einsum", [("a", randn(4, 4))], {"equation": "ii->"}, opset=12, **LOOSE)


def _rnn_inputs(gates, seq, batch, inp, hidden, dirs, with_b=True, with_h=False, with_c=False, with_p=False,
                with_lens=False):
    ins = [("x", randn(seq, batch, inp)), ("w", randn(dirs, gates * hidden, inp, scale=0.4)),
           ("r", randn(dirs, gates * hidden, hidden, scale=0.4))]
    ins.append(("b", randn(dirs, 2 * gates * hidden, scale=0.2)) if with_b else None)
    ins.append(("lens", np.array([seq] + [max(1, seq - 1 - i) for i in range(batch - 1)], np.int32))
               if with_lens else None)
    ins.append(("h0", randn(dirs, batch, hidden)) if with_h else None)
    if gates == 4:
        ins.append(("c0", randn(dirs, batch, hidden)) if with_c else None)
        ins.append(("p", randn(dirs, 3 * hidden, scale=0.2)) if with_p else None)
    while ins[-1] is None:
        ins.pop()
    return ins


def recurrent():
    for op, gates, nouts in (("RNN", 1, 2), ("GRU", 3, 2), ("LSTM", 4, 3)):
        add("forward", op, _rnn_inputs(gates, 4, 2, 3, 5, 1), {"hidden_size": 5}, opset=14, outs=nouts, **LOOSE)
        add("reverse_h0", op, _rnn_inputs(gates, 3, 2, 4, 3, 1, with_h=True, with_c=True),
            {"hidden_size": 3, "direction": "reverse"}, opset=14, outs=nouts, **LOOSE)
        add("bidirectional", op, _rnn_inputs(gates, 3, 1, 2, 4, 2, with_h=True),
            {"hidden_size": 4, "direction": "bidirectional"}, opset=14, outs=nouts, **LOOSE)
        add("no_bias_y_only", op, _rnn_inputs(gates, 2, 3, 2, 2, 1, with_b=False), {"hidden_size": 2},
            opset=7, outs=1, **LOOSE)
        add("seq_lens", op, _rnn_inputs(gates, 4, 3, 2, 3, 1, with_lens=True), {"hidden_size": 3},
            opset=14, outs=nouts, **LOOSE)
        add("seq_lens_bidir", op, _rnn_inputs(gates, 4, 3, 2, 3, 2, with_lens=True),
            {"hidden_size": 3, "direction": "bidirectional"}, opset=14, outs=nouts, **LOOSE)
        add("only_last_h", op, _rnn_inputs(gates, 3, 2, 2, 3, 1), {"hidden_size": 3}, opset=14,
            outs=["", "y_h"] + ([""] if gates == 4 else []), **LOOSE)
    add("activations", "RNN", _rnn_inputs(1, 3, 2, 2, 3, 1), {"hidden_size": 3, "activations": ["Relu"]},
        opset=14, outs=2, **LOOSE)
    add("clip", "RNN", _rnn_inputs(1, 3, 2, 2, 3, 1), {"hidden_size": 3, "clip": 0.5}, opset=14, outs=2, **LOOSE)
    add("linear_before_reset", "GRU", _rnn_inputs(3, 3, 2, 3, 4, 1, with_h=True),
        {"hidden_size": 4, "linear_before_reset": 1}, opset=14, outs=2, **LOOSE)
    add("peepholes", "LSTM", _rnn_inputs(4, 3, 2, 3, 2, 1, with_h=True, with_c=True, with_p=True),
        {"hidden_size": 2}, opset=14, outs=3, **LOOSE)
    add("input_forget", "LSTM", _rnn_inputs(4, 3, 1, 2, 3, 1), {"hidden_size": 3, "input_forget": 1},
        opset=14, outs=3, **LOOSE)


def generate():
    conv()
    conv_transpose()
    pooling()
    normalization()
    matmul()
    gemm()
    einsum()
    recurrent()
