"""Writes the ONNX models the frontend tests import, with the reference onnx.helper API and
torch.onnx.export, so kiln is checked against files written by other tools.

usage: make_models.py OUT_DIR
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def save(model, path):
    tmp = path + ".tmp"
    onnx.save(model, tmp)
    os.replace(tmp, path)


def if_outer(out):
    # Both branches read values of the enclosing graph (r, w, x) rather than inputs of their own.
    then_g = helper.make_graph([helper.make_node("Add", ["r", "w"], ["t"], name="then_add")], "then_g", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [2])])
    else_g = helper.make_graph([helper.make_node("Mul", ["x", "r"], ["e"], name="else_mul")], "else_g", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"], name="relu"),
         helper.make_node("If", ["cond"], ["y"], name="if", then_branch=then_g, else_branch=else_g)],
        "if_outer",
        [helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
        [numpy_helper.from_array(np.array([10, 20], np.float32), "w")])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "if_outer.onnx"))


def loop_outer(out):
    # v_{k+1} = v_k + x, where x is read from the outer graph.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep_going"),
         helper.make_node("Add", ["v_in", "x"], ["v_out"], name="acc")],
        "body",
        [helper.make_tensor_value_info("iter", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["trip", "", "x"], ["v"], name="loop", body=body)],
        "loop_outer",
        [helper.make_tensor_value_info("trip", TensorProto.INT64, []),
         helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "loop_outer.onnx"))


def dotted_dims(out):
    g = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])],  # no node name: kiln generates one
        "dotted",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["p2o.DynamicDimension.0", 3, None])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["p2o.DynamicDimension.0", 3, None])])
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)]), os.path.join(out, "dotted.onnx"))


def typed_fields(out):
    # helper.make_tensor without raw=True stores values in the typed fields.
    ts = [
        helper.make_tensor("f16", TensorProto.FLOAT16, [3], np.array([1.0, -2.5, 65504], np.float16)),
        helper.make_tensor("u8", TensorProto.UINT8, [2], [0, 255]),
        helper.make_tensor("i8", TensorProto.INT8, [2], [-128, 127]),
        helper.make_tensor("b", TensorProto.BOOL, [2], [True, False]),
        helper.make_tensor("i64", TensorProto.INT64, [2, 2], [1, -2, 3, -4]),
        helper.make_tensor("f64", TensorProto.DOUBLE, [1], [0.125]),
        helper.make_tensor("u64", TensorProto.UINT64, [1], [2**64 - 1]),
        helper.make_tensor("raw_f32", TensorProto.FLOAT, [2],
                           np.array([3.25, -1], np.float32).tobytes(), raw=True),
    ]
    g = helper.make_graph([], "typed", [], [helper.make_tensor_value_info(t.name, t.data_type, None) for t in ts], ts)
    save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), os.path.join(out, "typed.onnx"))


def external(out):
    w = numpy_helper.from_array(np.arange(1000, dtype=np.float32).reshape(10, 100) * 0.5, "w")
    b = numpy_helper.from_array(np.arange(100, dtype=np.int64) - 50, "b")
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm")], "ext",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 10])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 100]),
         helper.make_tensor_value_info("b", TensorProto.INT64, [100])], [w, b])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    onnx.save_model(model, os.path.join(out, "external.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="external.onnx.data", size_threshold=0)


def torch_small(out):
    import torch

    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv = torch.nn.Conv2d(3, 4, 3, padding=1)
            self.bn = torch.nn.BatchNorm2d(4)
            self.fc = torch.nn.Linear(4 * 8 * 8, 5)

        def forward(self, x):
            y = torch.relu(self.bn(self.conv(x)))
            return self.fc(torch.flatten(y, 1))

    torch.manual_seed(0)
    net = Net().eval()
    path = os.path.join(out, "torch_small.onnx")
    torch.onnx.export(net, torch.randn(1, 3, 8, 8), path + ".tmp.onnx", opset_version=13,
                      input_names=["input"], output_names=["logits"],
                      dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}})
    os.replace(path + ".tmp.onnx", path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for make in (if_outer, loop_outer, dotted_dims, typed_fields, external, torch_small):
        make(out)


if __name__ == "__main__":
    main()
