// Test helpers: build small ONNX models with the protobuf API, per-test temp dirs, and a
// structural comparison of two kiln graphs.
#pragma once
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "kiln/frontend/onnx.h"

namespace kiln::testing {

// A ModelProto with ir_version 8, ai.onnx opset 13 and an empty graph named "g".
inline onnx::ModelProto new_model(int64_t opset = 13, int64_t ir_version = 8) {
  onnx::ModelProto m;
  m.set_ir_version(ir_version);
  m.set_producer_name("kiln-test");
  auto* os = m.add_opset_import();
  os->set_domain("");
  os->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

// dims: >= 0 static, -1 unknown; syms (same length, "" = not symbolic) give dim_param.
inline void set_type(onnx::ValueInfoProto* vi, const std::string& name, int32_t elem,
                     const std::vector<int64_t>& dims, const std::vector<std::string>& syms = {}) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* sh = tt->mutable_shape();
  for (size_t i = 0; i < dims.size(); ++i) {
    auto* d = sh->add_dim();
    if (i < syms.size() && !syms[i].empty()) d->set_dim_param(syms[i]);
    else if (dims[i] >= 0) d->set_dim_value(dims[i]);
  }
}

inline void add_input(onnx::GraphProto* g, const std::string& name, int32_t elem, const std::vector<int64_t>& dims,
                      const std::vector<std::string>& syms = {}) {
  set_type(g->add_input(), name, elem, dims, syms);
}
inline void add_output(onnx::GraphProto* g, const std::string& name, int32_t elem, const std::vector<int64_t>& dims,
                       const std::vector<std::string>& syms = {}) {
  set_type(g->add_output(), name, elem, dims, syms);
}

inline onnx::NodeProto* add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& ins,
                                 const std::vector<std::string>& outs, const std::string& name = "") {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const auto& i : ins) n->add_input(i);
  for (const auto& o : outs) n->add_output(o);
  return n;
}

inline onnx::TensorProto float_tensor(const std::string& name, const std::vector<int64_t>& dims,
                                      const std::vector<float>& vals) {
  onnx::TensorProto t;
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (auto d : dims) t.add_dims(d);
  for (auto v : vals) t.add_float_data(v);
  return t;
}

inline std::string serialize(const onnx::ModelProto& m) {
  std::string s;
  EXPECT_TRUE(m.SerializeToString(&s));
  return s;
}

inline ImportOptions structural() { return ImportOptions{.verify = true, .infer = false}; }

// An empty directory under the build tree, unique to the running test.
inline std::filesystem::path test_dir() {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  auto dir = std::filesystem::path(KILN_BINARY_DIR) / "frontend_test_tmp" /
             (std::string(info->test_suite_name()) + "." + info->name());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

inline void write_file(const std::filesystem::path& p, const std::string& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << p;
}

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// Expects `fn` to throw kiln::Error whose message contains `needle`.
template <typename Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "expected kiln::Error containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << "message: " << e.what();
  }
}

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what);
// Same names, ops, domains, attributes (subgraphs recursively), inputs by name, dtypes,
// shapes and initializer data. Node names are compared too.
void expect_same_graph(const Graph& a, const Graph& b);

}  // namespace kiln::testing
