// The op table is complete: every declared op has shape inference, a reference kernel and a
// one-line doc; names are unique; lookups resolve "ai.onnx" to the default domain.
#include <gtest/gtest.h>

#include <set>

#include "kiln/ops/op.h"

namespace kiln::ops {
namespace {

TEST(OpTable, EveryOpIsFullyDeclared) {
  const auto& ops = all_ops();
  EXPECT_GE(ops.size(), 110u);
  std::set<std::pair<std::string, std::string>> seen;
  for (const OpDef* d : ops) {
    SCOPED_TRACE(std::string(d->name));
    EXPECT_TRUE(d->infer != nullptr) << "no shape inference";
    EXPECT_TRUE(d->kernel != nullptr) << "no reference kernel";
    EXPECT_FALSE(d->doc.empty()) << "no doc line";
    EXPECT_GE(d->since, 1);
    EXPECT_LE(d->since, kMaxOpset + 3);  // Gelu/Mish are accepted before their ONNX opset
    EXPECT_TRUE(d->max_inputs < 0 || d->max_inputs >= d->min_inputs);
    EXPECT_TRUE(seen.insert({std::string(d->domain), std::string(d->name)}).second) << "declared twice";
  }
}

TEST(OpTable, LookupByDomain) {
  ASSERT_NE(find_op("", "Conv"), nullptr);
  EXPECT_EQ(find_op("ai.onnx", "Conv"), find_op("", "Conv"));
  EXPECT_EQ(find_op("", "NoSuchOp"), nullptr);
  EXPECT_EQ(find_op("com.example", "Conv"), nullptr);
}

TEST(OpTable, VerifierNamesNodeOpAndOpset) {
  Model m;
  m.opsets[""] = 18;
  Value* x = m.graph->add_input("x", DType::f32, Shape{2});
  Node* n = m.graph->add_node("Relu", {x}, {"y"}, {}, "act");
  m.graph->outputs.push_back(n->outputs[0]);
  try {
    verify_model(m);
    FAIL() << "opset 18 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Relu node 'act' (ai.onnx opset 18): opset 18 is out of the supported range 7..17");
  }
  m.opsets[""] = 13;
  n->op = "Frobnicate";
  try {
    verify_model(m);
    FAIL() << "unknown op accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "Frobnicate node 'act' (ai.onnx opset 13): unknown op 'Frobnicate'");
  }
}

}  // namespace
}  // namespace kiln::ops
