// Bad ONNX input: every case must end in kiln::Error with a line naming what is wrong,
// never a crash, an out-of-bounds read or another exception type.
#include "frontend/onnx_builder.h"

namespace kiln::testing {
namespace {

using TP = onnx::TensorProto;

onnx::ModelProto small_valid_model() {
  auto m = new_model(13);
  auto* g = m.mutable_graph();
  add_input(g, "x", TP::FLOAT, {-1, 2}, {"N", ""});
  *g->add_initializer() = float_tensor("w", {2}, {1.f, 2.f});
  add_node(g, "Add", {"x", "w"}, {"a"}, "add");
  auto* iff = add_node(g, "If", {"c"}, {"o"}, "if");
  auto* a = iff->add_attribute();
  a->set_name("then_branch");
  a->set_type(onnx::AttributeProto::GRAPH);
  add_node(a->mutable_g(), "Relu", {"a"}, {"t"}, "r");
  add_output(a->mutable_g(), "t", TP::FLOAT, {-1, 2});
  *iff->add_attribute() = *a;
  iff->mutable_attribute(1)->set_name("else_branch");
  add_input(g, "c", TP::BOOL, {});
  // Inputs must precede use: move "c" before the nodes by rebuilding the input list order.
  g->mutable_input()->SwapElements(0, 1);
  add_output(g, "o", TP::FLOAT, {-1, 2});
  return m;
}

std::string bytes_of(const onnx::ModelProto& m) { return serialize(m); }

void expect_bytes_error(const std::string& bytes, const std::string& needle) {
  expect_error([&] { import_onnx_bytes(bytes, structural()); }, needle);
}
void expect_model_error(const onnx::ModelProto& m, const std::string& needle) {
  expect_bytes_error(bytes_of(m), needle);
}

TEST(OnnxErrors, ValidBaselineImports) {
  Model k = import_onnx_bytes(bytes_of(small_valid_model()), structural());
  EXPECT_EQ(k.graph->nodes().size(), 2u);
}

TEST(OnnxErrors, EveryTruncationThrows) {
  std::string full = bytes_of(small_valid_model());
  ASSERT_GT(full.size(), 100u);
  for (size_t cut = 0; cut < full.size(); ++cut) {
    std::string part = full.substr(0, cut);
    EXPECT_THROW(import_onnx_bytes(part, structural()), Error) << "cut at " << cut;
  }
}

TEST(OnnxErrors, FlippedBytesNeverCrash) {
  std::string full = bytes_of(small_valid_model());
  int errors = 0;
  for (size_t i = 0; i < full.size(); ++i) {
    for (uint8_t mask : {0xFF, 0x01, 0x80}) {
      std::string bad = full;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      try {
        import_onnx_bytes(bad, ImportOptions{.verify = true, .infer = true});
      } catch (const Error&) {
        ++errors;
      }  // any other exception type fails the test by escaping
    }
  }
  EXPECT_GT(errors, static_cast<int>(full.size()));  // most flips break something
}

TEST(OnnxErrors, UnreadableFiles) {
  auto dir = test_dir();
  expect_error([&] { import_onnx((dir / "missing.onnx").string()); }, "missing.onnx: cannot open");
  expect_error([&] { import_onnx(dir.string()); }, "is a directory");
  write_file(dir / "empty.onnx", "");
  expect_error([&] { import_onnx((dir / "empty.onnx").string()); }, "empty.onnx: not a valid ONNX model");
  write_file(dir / "text.onnx", "this is not a protobuf at all\n");
  expect_error([&] { import_onnx((dir / "text.onnx").string()); }, "text.onnx: not a valid ONNX");
  // A truncated file names the file as well.
  std::string full = bytes_of(small_valid_model());
  write_file(dir / "cut.onnx", full.substr(0, full.size() / 2));
  expect_error([&] { import_onnx((dir / "cut.onnx").string()); }, "cut.onnx: not a valid ONNX");
}

TEST(OnnxErrors, MissingModelFields) {
  auto m = small_valid_model();
  m.clear_graph();
  expect_model_error(m, "has no graph");
  m = small_valid_model();
  m.clear_ir_version();
  expect_model_error(m, "ir_version is missing");
  m = small_valid_model();
  m.clear_opset_import();
  expect_model_error(m, "opset_import is missing");
  m = small_valid_model();
  *m.add_opset_import() = m.opset_import(0);
  expect_model_error(m, "lists domain 'ai.onnx' twice");
}

TEST(OnnxErrors, TensorDataSizeMismatches) {
  auto m = small_valid_model();
  auto* w = m.mutable_graph()->mutable_initializer(0);
  w->clear_float_data();
  w->set_raw_data(std::string(7, '\0'));  // f32[2] needs 8 bytes
  expect_model_error(m, "initializer 'w': raw_data has 7 bytes, f32[2] needs 8");
  w->set_raw_data(std::string(9, '\0'));
  expect_model_error(m, "raw_data has 9 bytes");
  w->clear_raw_data();
  w->add_float_data(1.f);
  w->add_float_data(2.f);
  w->add_float_data(3.f);
  expect_model_error(m, "initializer 'w': float_data has 3 values, f32[2] needs 2");
  w->clear_float_data();
  expect_model_error(m, "float_data has 0 values");
  // Data in the field of another type.
  w->add_int64_data(1), w->add_int64_data(2);
  expect_model_error(m, "float_data has 0 values");
  // Dims whose byte count would overflow must not allocate or read anything.
  w->clear_dims();
  w->add_dims(int64_t{1} << 40), w->add_dims(int64_t{1} << 40);
  expect_model_error(m, "dims [1099511627776,1099511627776] are too large");
  // Also when a zero dim makes the tensor empty: strides would still overflow.
  w->clear_dims();
  w->add_dims(0), w->add_dims(int64_t{1} << 40), w->add_dims(int64_t{1} << 40);
  expect_model_error(m, "are too large");
  w->clear_dims();
  w->add_dims(int64_t{1} << 40);
  expect_model_error(m, "float_data has 0 values, f32[1099511627776] needs 1099511627776");
}

TEST(OnnxErrors, NegativeDimsAndUnknownTypes) {
  auto m = small_valid_model();
  m.mutable_graph()->mutable_initializer(0)->set_dims(0, -2);
  expect_model_error(m, "initializer 'w': negative dim -2");
  m = small_valid_model();
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_value(-1);
  expect_model_error(m, "input 'x': negative dim -1");
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(1)
      ->set_dim_value(int64_t{1} << 62);
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)
      ->set_dim_value(16);
  expect_model_error(m, "input 'x': dims [16,4611686018427387904] are too large");
  m = small_valid_model();
  m.mutable_graph()->mutable_initializer(0)->set_data_type(99);
  expect_model_error(m, "initializer 'w': unknown ONNX data type 99");
  m = small_valid_model();
  m.mutable_graph()->mutable_initializer(0)->set_data_type(TP::STRING);
  expect_model_error(m, "string tensors are not supported");
  m = small_valid_model();
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_tensor_type()->set_elem_type(TP::COMPLEX64);
  expect_model_error(m, "input 'x': complex tensors are not supported");
  m = small_valid_model();
  m.mutable_graph()->mutable_input(1)->mutable_type()->mutable_sequence_type();
  expect_model_error(m, "input 'x': only tensor types are supported");
}

TEST(OnnxErrors, NamesAndScoping) {
  auto m = small_valid_model();
  *m.mutable_graph()->add_initializer() = float_tensor("w", {1}, {0.f});
  expect_model_error(m, "initializer 'w' is defined twice");
  m = small_valid_model();
  add_input(m.mutable_graph(), "x", TP::FLOAT, {1});
  expect_model_error(m, "value 'x' is defined twice");
  m = small_valid_model();
  m.mutable_graph()->mutable_node(0)->set_output(0, "x");
  expect_model_error(m, "Add node 'add': output 'x' is already defined");
  m = small_valid_model();
  m.mutable_graph()->mutable_node(0)->set_input(1, "nowhere");
  expect_model_error(m, "Add node 'add': input 1 'nowhere' is not defined before it is used");
  // A subgraph reading an outer value defined only after the node is out of scope.
  m = small_valid_model();
  m.mutable_graph()->mutable_node(1)->mutable_attribute(0)->mutable_g()->mutable_node(0)->set_input(0, "o");
  expect_model_error(m, "Relu node 'r': input 0 'o' is not defined");
  m = small_valid_model();
  m.mutable_graph()->mutable_output(0)->set_name("ghost");
  expect_model_error(m, "output 'ghost' is never produced");
  m = small_valid_model();
  m.mutable_graph()->mutable_node(0)->clear_op_type();
  expect_model_error(m, "has no op_type");
}

TEST(OnnxErrors, UnsupportedAttributesAndSparse) {
  auto m = small_valid_model();
  auto* a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("sp");
  a->set_type(onnx::AttributeProto::SPARSE_TENSOR);
  expect_model_error(m, "Add node 'add': attribute 'sp': sparse tensor attributes are not supported");
  m = small_valid_model();
  a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("nothing");
  expect_model_error(m, "attribute 'nothing': has no value");
  m = small_valid_model();
  a = m.mutable_graph()->mutable_node(0)->add_attribute();
  a->set_name("k");
  a->set_i(1);
  *m.mutable_graph()->mutable_node(0)->add_attribute() = *a;
  expect_model_error(m, "attribute 'k' is given twice");
  m = small_valid_model();
  m.mutable_graph()->add_sparse_initializer();
  expect_model_error(m, "sparse initializers are not supported");
}

TEST(OnnxErrors, VerifierNamesNodeOpAndOpset) {
  auto m = small_valid_model();
  m.mutable_graph()->mutable_node(0)->set_op_type("FancyNewOp");
  expect_model_error(m, "FancyNewOp node 'add' (ai.onnx opset 13): unknown op 'FancyNewOp'");
  m = small_valid_model();
  m.mutable_opset_import(0)->set_version(6);
  expect_model_error(m, "opset 6 is out of the supported range 7..17");
  m = small_valid_model();
  m.mutable_opset_import(0)->set_version(18);
  expect_model_error(m, "opset 18 is out of the supported range");
  // Without verification the same model imports.
  EXPECT_NO_THROW(import_onnx_bytes(bytes_of(m), ImportOptions{.verify = false, .infer = false}));
}

}  // namespace
}  // namespace kiln::testing
