// Graph -> GraphProto. Values are referred to by name, so a subgraph's reads of outer
// values need nothing special. value_info records every intermediate value whose dtype
// is known, so a re-import keeps shapes even before inference runs.
#include <set>

#include "onnx_convert.h"

namespace kiln::onnx_io {
namespace {

using AP = onnx::AttributeProto;

struct Writer {
  int64_t ir_version;
  int64_t external_over;
  ExternalWriter* external;

  void tensor(const Tensor& t, onnx::TensorProto* tp) const {
    if (external && external_over >= 0 && static_cast<int64_t>(t.nbytes()) > external_over) {
      KILN_CHECK(dtype_to_onnx(t.dtype()) != onnx::TensorProto::UNDEFINED, "cannot export a tensor of dtype ",
                 dtype_name(t.dtype()));
      tp->set_data_type(dtype_to_onnx(t.dtype()));
      for (int64_t d : t.dims()) tp->add_dims(d);
      external->store(t, tp);
      return;
    }
    tensor_to_onnx(t, tp);
  }

  void attribute(const std::string& name, const Attribute& a, AP* ap) const {
    ap->set_name(name);
    switch (a.kind()) {
      case AttrKind::Int: ap->set_type(AP::INT), ap->set_i(a.i()); break;
      case AttrKind::Float: ap->set_type(AP::FLOAT), ap->set_f(a.f()); break;
      case AttrKind::String: ap->set_type(AP::STRING), ap->set_s(a.s()); break;
      case AttrKind::Tensor: ap->set_type(AP::TENSOR), tensor(a.t(), ap->mutable_t()); break;
      case AttrKind::Graph:
        KILN_CHECK(a.g() != nullptr, "attribute '", name, "' holds no graph");
        ap->set_type(AP::GRAPH);
        graph(*a.g(), ap->mutable_g());
        break;
      case AttrKind::Ints:
        ap->set_type(AP::INTS);
        for (int64_t v : a.ints()) ap->add_ints(v);
        break;
      case AttrKind::Floats:
        ap->set_type(AP::FLOATS);
        for (float v : a.floats()) ap->add_floats(v);
        break;
      case AttrKind::Strings:
        ap->set_type(AP::STRINGS);
        for (const auto& v : a.strings()) ap->add_strings(v);
        break;
    }
  }

  static void value_info(const Value* v, onnx::ValueInfoProto* vi) {
    vi->set_name(v->name);
    type_to_onnx(v->dtype, v->shape, vi->mutable_type());
  }

  void graph(const Graph& g, onnx::GraphProto* gp) const {
    gp->set_name(g.name);
    std::set<const Value*> listed_inputs(g.inputs.begin(), g.inputs.end());
    for (const Value* v : g.inputs) value_info(v, gp->add_input());
    // IR < 4 requires every initializer to be listed as an input as well.
    if (ir_version < 4)
      for (const Value* v : g.initializers)
        if (!listed_inputs.count(v)) value_info(v, gp->add_input());
    for (const Value* v : g.initializers) {
      KILN_CHECK(v->initializer.has_value(), "initializer '", v->name, "' has no data");
      auto* tp = gp->add_initializer();
      tensor(*v->initializer, tp);
      tp->set_name(v->name);
    }
    std::set<const Value*> outputs(g.outputs.begin(), g.outputs.end());
    for (const auto& n : g.nodes()) {
      auto* np = gp->add_node();
      np->set_op_type(n->op);
      if (!n->domain.empty()) np->set_domain(n->domain);
      np->set_name(n->name);
      for (const Value* in : n->inputs) np->add_input(in ? in->name : "");
      for (const Value* out : n->outputs) np->add_output(out ? out->name : "");
      for (const auto& [k, a] : n->attrs) attribute(k, a, np->add_attribute());
      for (const Value* out : n->outputs)
        if (out && !outputs.count(out) && out->dtype != DType::undefined) value_info(out, gp->add_value_info());
    }
    for (const Value* v : g.outputs) value_info(v, gp->add_output());
  }
};

}  // namespace

void graph_to_onnx(const Graph& g, onnx::GraphProto* gp, int64_t ir_version, int64_t external_over,
                   ExternalWriter* external) {
  Writer{ir_version, external_over, external}.graph(g, gp);
}

}  // namespace kiln::onnx_io
