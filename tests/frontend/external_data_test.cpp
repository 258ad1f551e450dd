// External data: tensors stored in files next to the model, memory-mapped on import.
#include <cstring>

#include "frontend/onnx_builder.h"

namespace kiln::testing {
namespace {

using TP = onnx::TensorProto;

void set_external(TP* t, const std::string& location, int64_t offset, int64_t length) {
  t->set_data_location(TP::EXTERNAL);
  auto add = [&](const char* k, const std::string& v) {
    auto* kv = t->add_external_data();
    kv->set_key(k);
    kv->set_value(v);
  };
  add("location", location);
  if (offset >= 0) add("offset", std::to_string(offset));
  if (length >= 0) add("length", std::to_string(length));
}

// A model with two external f32 initializers: "a" (f32[4]) at `offset_a`, "b" (i64[2])
// with no offset key in its own file under a subdirectory.
onnx::ModelProto external_model(const std::string& loc_a, int64_t offset_a, int64_t length_a = 16) {
  auto m = new_model();
  auto* g = m.mutable_graph();
  auto* a = g->add_initializer();
  a->set_name("a");
  a->set_data_type(TP::FLOAT);
  a->add_dims(4);
  set_external(a, loc_a, offset_a, length_a);
  auto* b = g->add_initializer();
  b->set_name("b");
  b->set_data_type(TP::INT64);
  b->add_dims(2);
  set_external(b, "sub/b.bin", -1, -1);
  g->add_output()->set_name("a");
  g->add_output()->set_name("b");
  return m;
}

void write_data_files(const std::filesystem::path& dir, size_t offset_a) {
  std::string blob(offset_a, 'x');
  float av[4] = {1.f, -2.f, 3.5f, 4.f};
  blob.append(reinterpret_cast<char*>(av), sizeof av);
  blob.append("trailing bytes are fine");
  write_file(dir / "weights.bin", blob);
  std::filesystem::create_directories(dir / "sub");
  int64_t bv[2] = {-1, int64_t{1} << 33};
  write_file(dir / "sub" / "b.bin", std::string(reinterpret_cast<char*>(bv), sizeof bv));
}

TEST(OnnxExternalData, OffsetsAndSubdirectories) {
  auto dir = test_dir();
  write_data_files(dir, 4096 + 64);
  write_file(dir / "m.onnx", serialize(external_model("weights.bin", 4096 + 64)));
  Model k = import_onnx((dir / "m.onnx").string(), structural());
  const Tensor& a = *k.graph->find("a")->initializer;
  EXPECT_EQ(a.dims(), (std::vector<int64_t>{4}));
  EXPECT_EQ(a.as_double(0), 1.0);
  EXPECT_EQ(a.as_double(2), 3.5);
  EXPECT_EQ(a.as_double(3), 4.0);
  const Tensor& b = *k.graph->find("b")->initializer;
  EXPECT_EQ(b.as_int64(0), -1);
  EXPECT_EQ(b.as_int64(1), int64_t{1} << 33);
}

TEST(OnnxExternalData, MisalignedOffsetIsCopied) {
  auto dir = test_dir();
  write_data_files(dir, 3);
  write_file(dir / "m.onnx", serialize(external_model("weights.bin", 3)));
  Model k = import_onnx((dir / "m.onnx").string(), structural());
  const Tensor& a = *k.graph->find("a")->initializer;
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a.raw()) % 4, 0u);
  EXPECT_EQ(a.as_double(1), -2.0);
}

TEST(OnnxExternalData, Errors) {
  auto dir = test_dir();
  write_data_files(dir, 0);
  auto path = (dir / "m.onnx").string();
  auto try_model = [&](const onnx::ModelProto& m, const std::string& needle) {
    write_file(path, serialize(m));
    expect_error([&] { import_onnx(path, structural()); }, needle);
  };
  try_model(external_model("../weights.bin", 0), "initializer 'a': external data location '../weights.bin' escapes");
  try_model(external_model("sub/../../x", 0), "escapes the model directory");
  try_model(external_model("/etc/passwd", 0), "location '/etc/passwd' is absolute");
  try_model(external_model("", 0), "external data has no location");
  try_model(external_model("nope.bin", 0), "initializer 'a': external data: ");
  try_model(external_model("nope.bin", 0), "nope.bin: cannot open");
  // weights.bin holds 16 + 23 bytes: f32[4] at offset 30 runs past the end.
  try_model(external_model("weights.bin", 30), "past the end of the file");
  try_model(external_model("weights.bin", 0, 12), "external data length 12 does not match f32[4] (16 bytes)");
  auto bad = external_model("weights.bin", 0);
  bad.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("12abc");
  try_model(bad, "external data offset '12abc' is not a non-negative integer");
  bad = external_model("weights.bin", 0);
  bad.mutable_graph()->mutable_initializer(0)->mutable_external_data(1)->set_value("-4");
  try_model(bad, "is not a non-negative integer");
  // Every error names the model file too.
  try_model(external_model("../w", 0), path + ": graph 'g': initializer 'a'");
  // From bytes there is no directory to resolve against.
  expect_error([&] { import_onnx_bytes(serialize(external_model("weights.bin", 0)), structural()); },
               "needs the model loaded from a file");
}

}  // namespace
}  // namespace kiln::testing
