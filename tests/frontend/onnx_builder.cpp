#include "frontend/onnx_builder.h"

#include <cstring>

namespace kiln::testing {

void expect_same_tensor(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.dtype(), b.dtype()) << what;
  ASSERT_EQ(a.dims(), b.dims()) << what;
  ASSERT_EQ(a.nbytes(), b.nbytes()) << what;
  if (a.nbytes()) {
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << what << ": data differs";
  }
}

namespace {
std::vector<std::string> names(const std::vector<Value*>& vs) {
  std::vector<std::string> out;
  for (const Value* v : vs) out.push_back(v ? v->name : "");
  return out;
}

void expect_same_value(const Value* a, const Value* b) {
  ASSERT_EQ(a == nullptr, b == nullptr);
  if (!a) return;
  EXPECT_EQ(a->name, b->name);
  EXPECT_EQ(a->dtype, b->dtype) << a->name;
  EXPECT_EQ(a->shape, b->shape) << a->name << ": " << a->shape.str() << " vs " << b->shape.str();
  ASSERT_EQ(a->initializer.has_value(), b->initializer.has_value()) << a->name;
  if (a->initializer) expect_same_tensor(*a->initializer, *b->initializer, a->name);
}

void expect_same_attr(const Attribute& a, const Attribute& b, const std::string& what) {
  ASSERT_EQ(a.kind(), b.kind()) << what;
  switch (a.kind()) {
    case AttrKind::Int: EXPECT_EQ(a.i(), b.i()) << what; break;
    case AttrKind::Float: EXPECT_EQ(a.f(), b.f()) << what; break;
    case AttrKind::String: EXPECT_EQ(a.s(), b.s()) << what; break;
    case AttrKind::Tensor: expect_same_tensor(a.t(), b.t(), what); break;
    case AttrKind::Graph: expect_same_graph(*a.g(), *b.g()); break;
    case AttrKind::Ints: EXPECT_EQ(a.ints(), b.ints()) << what; break;
    case AttrKind::Floats: EXPECT_EQ(a.floats(), b.floats()) << what; break;
    case AttrKind::Strings: EXPECT_EQ(a.strings(), b.strings()) << what; break;
  }
}
}  // namespace

void expect_same_graph(const Graph& a, const Graph& b) {
  EXPECT_EQ(a.name, b.name);
  ASSERT_EQ(names(a.inputs), names(b.inputs)) << "graph " << a.name;
  ASSERT_EQ(names(a.outputs), names(b.outputs)) << "graph " << a.name;
  ASSERT_EQ(names(a.initializers), names(b.initializers)) << "graph " << a.name;
  for (size_t i = 0; i < a.inputs.size(); ++i) expect_same_value(a.inputs[i], b.inputs[i]);
  for (size_t i = 0; i < a.outputs.size(); ++i) expect_same_value(a.outputs[i], b.outputs[i]);
  for (size_t i = 0; i < a.initializers.size(); ++i) expect_same_value(a.initializers[i], b.initializers[i]);
  ASSERT_EQ(a.nodes().size(), b.nodes().size()) << "graph " << a.name;
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node& x = *a.nodes()[i];
    const Node& y = *b.nodes()[i];
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.domain, y.domain);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(names(x.inputs), names(y.inputs)) << x.describe();
    ASSERT_EQ(x.outputs.size(), y.outputs.size()) << x.describe();
    for (size_t k = 0; k < x.outputs.size(); ++k) expect_same_value(x.outputs[k], y.outputs[k]);
    ASSERT_EQ(x.attrs.size(), y.attrs.size()) << x.describe();
    for (const auto& [k, v] : x.attrs) {
      ASSERT_TRUE(y.has_attr(k)) << x.describe() << " lacks " << k;
      expect_same_attr(v, *y.find_attr(k), x.describe() + "." + k);
    }
  }
}

}  // namespace kiln::testing
