"""Shared pieces of the conformance case generator: the case list, seeded input makers and
the writer that turns one case into build/conformance/<case>/{model.onnx,inputs/*.npy,meta.txt}.

A case is one single-node ONNX model (control-flow ops carry their subgraphs as attributes).
Inputs are graph inputs with .npy files unless listed in `consts`, in which case they are
initializers (so kiln's shape inference sees them as constants, as in real exported models).
"""
import os

import numpy as np
import onnx
from onnx import helper, numpy_helper

# One global generator: the script runs cases in a fixed order, so data are deterministic.
RNG = np.random.default_rng(20261122)

NP_TO_ONNX = {
    np.dtype(np.float32): onnx.TensorProto.FLOAT,
    np.dtype(np.float16): onnx.TensorProto.FLOAT16,
    np.dtype(np.float64): onnx.TensorProto.DOUBLE,
    np.dtype(np.int8): onnx.TensorProto.INT8,
    np.dtype(np.uint8): onnx.TensorProto.UINT8,
    np.dtype(np.int16): onnx.TensorProto.INT16,
    np.dtype(np.uint16): onnx.TensorProto.UINT16,
    np.dtype(np.int32): onnx.TensorProto.INT32,
    np.dtype(np.uint32): onnx.TensorProto.UINT32,
    np.dtype(np.int64): onnx.TensorProto.INT64,
    np.dtype(np.uint64): onnx.TensorProto.UINT64,
    np.dtype(np.bool_): onnx.TensorProto.BOOL,
}

# kiln imports models of ai.onnx opsets 7..17. Ops ONNX added later (Mish 18, Gelu 20) kiln
# accepts at every opset it imports, while ORT knows them only from their first opset: such a
# case is written at opset 17 as model.onnx (for kiln) and at the op's first opset as
# model_ort.onnx (for ORT), with the same node.
SUPPORTED_OPSETS = (7, 17)
NEWER_OPS = {"Mish": 18, "Gelu": 20}

# Default tolerance: |kiln - ort| <= ATOL + RTOL * |ort| elementwise, for float outputs.
ATOL, RTOL = 1e-5, 1e-4
# Ops that sum many products (order of accumulation differs from ORT's MLAS kernels).
LOOSE = dict(atol=1e-4, rtol=1e-4)


class Case:
    def __init__(self, name, op, ins, attrs, opset, outs, consts, atol, rtol, domain, extra_opsets,
                 out_types, side):
        self.side = side
        self.name, self.op, self.ins, self.attrs = name, op, ins, attrs
        self.opset, self.outs, self.consts = opset, outs, set(consts)
        self.atol, self.rtol, self.domain = atol, rtol, domain
        self.extra_opsets, self.out_types = extra_opsets, out_types


CASES = []
_NAMES = set()


def add(name, op, ins, attrs=None, opset=17, outs=1, consts=(), atol=ATOL, rtol=RTOL, domain="",
        extra_opsets=None, out_types=None, side=()):
    """ins: list of (input name, np.ndarray) or None for an omitted optional input.
    outs: number of outputs (named y, or y0, y1, ...) or a list of names ("" = omitted).
    side: extra graph inputs that the node does not take but its subgraphs read."""
    full = f"{op}_{name}"
    lo, hi = SUPPORTED_OPSETS
    assert lo <= opset <= hi, f"{full}: opset {opset} outside {lo}..{hi}"
    assert full not in _NAMES, f"duplicate case {full}"
    _NAMES.add(full)
    if isinstance(outs, int):
        outs = ["y"] if outs == 1 else [f"y{i}" for i in range(outs)]
    CASES.append(Case(full, op, ins, attrs or {}, opset, outs, consts, atol, rtol, domain,
                      extra_opsets or {}, out_types, list(side)))


# ---- seeded inputs -------------------------------------------------------------------------
def f32(*shape, lo=-1.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def randn(*shape, scale=1.0):
    return (RNG.standard_normal(size=shape) * scale).astype(np.float32)


def ints(*shape, lo=-10, hi=10, dtype=np.int64):
    return RNG.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def bools(*shape):
    return RNG.integers(0, 1, size=shape, endpoint=True).astype(np.bool_)


def i64(*vals):
    return np.array(vals, dtype=np.int64)


def scalar(v, dtype):
    return np.array(v, dtype=dtype)


# ---- writing ---------------------------------------------------------------------------------
def _value_info(name, arr):
    return helper.make_tensor_value_info(name, NP_TO_ONNX[arr.dtype], list(arr.shape))


def _graph_of(c):
    ins, inits, node_inputs = [], [], []
    for item in c.ins:
        if item is None:
            node_inputs.append("")
            continue
        node_inputs.append(item[0])
    for item in [i for i in c.ins if i is not None] + c.side:
        nm, arr = item
        if nm in c.consts:
            inits.append(numpy_helper.from_array(arr, nm))
        else:
            ins.append(_value_info(nm, arr))
    node = helper.make_node(c.op, node_inputs, c.outs, domain=c.domain or None, **c.attrs)
    outs = [onnx.ValueInfoProto(name=o) for o in c.outs if o]
    return helper.make_graph([node], c.name, ins, outs, initializer=inits)


def _type_outputs(model, c):
    """Declares each output's element type (taken from ONNX shape inference or the case) but
    no shape, so kiln's own shape inference is what the test checks against ORT's shapes."""
    types = {}
    if c.out_types:
        types.update(c.out_types)
    else:
        try:
            inferred = onnx.shape_inference.infer_shapes(model)
            for o in inferred.graph.output:
                if o.type.tensor_type.elem_type:
                    types[o.name] = o.type.tensor_type.elem_type
        except Exception:  # ops newer than onnx 1.12 knows: leave untyped (ORT infers)
            pass
    for o in model.graph.output:
        if o.name in types:
            o.type.tensor_type.elem_type = types[o.name]


def _model_of(c, opset):
    opsets = [helper.make_opsetid("", opset)]
    for dom, ver in c.extra_opsets.items():
        opsets.append(helper.make_opsetid(dom, ver))
    model = helper.make_model(_graph_of(c), opset_imports=opsets, producer_name="kiln-conformance")
    model.ir_version = 8
    _type_outputs(model, c)
    return model


def write_case(c, root):
    d = os.path.join(root, c.name)
    os.makedirs(os.path.join(d, "inputs"), exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as fh:
        fh.write(_model_of(c, c.opset).SerializeToString())
    if c.op in NEWER_OPS:
        with open(os.path.join(d, "model_ort.onnx"), "wb") as fh:
            fh.write(_model_of(c, NEWER_OPS[c.op]).SerializeToString())
    for item in c.ins + c.side:
        if item is not None and item[0] not in c.consts:
            np.save(os.path.join(d, "inputs", item[0] + ".npy"), item[1])
    with open(os.path.join(d, "meta.txt"), "w") as fh:
        fh.write(f"op {c.op}\nopset {c.opset}\natol {c.atol}\nrtol {c.rtol}\n")
