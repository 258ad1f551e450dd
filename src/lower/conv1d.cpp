// 1-D convolutions as 2-D ones of height 1, so they reach the packed 2-D kernels (Silero VAD's
// encoder and its STFT are Conv1d): x [N,C,W] is viewed as [N,C,1,W], the weight [K,C/g,S]
// becomes [K,C/g,1,S], the output [N,K,1,OW] is viewed back as [N,K,OW]. Both views are Reshapes
// with 0 (copy the dim) and -1, which the memory plan makes free; so is the residual's.
#include <algorithm>

#include "kiln/ops/kiln_ops.h"
#include "lower_internal.h"

namespace kiln::lower {
namespace {

bool is_conv(const Node& n) {
  return (n.domain.empty() && n.op == "Conv") || (n.domain == ops::kKilnDomain && n.op == "FusedConv");
}

// The weight's rank says the convolution is 1-D even where the input's is not known yet (inside
// a branch whose shapes depend on the input's).
bool lowerable_1d(const Node& n) {
  const Value* x = n.input(0);
  const Value* w = n.input(1);
  return is_conv(n) && n.attr_i("packed", 0) == 0 && x && x->dtype == DType::f32 &&
         (!x->shape.rank_known || x->shape.rank() == 3) && w && w->is_constant() &&
         w->initializer->dtype() == DType::f32 && w->initializer->rank() == 3 && n.outputs.size() == 1 && n.outputs[0];
}

// [a, b, c] -> [a, b, 1, c]; an unknown rank is 3 (a 1-D convolution's), its dims unknown.
Shape with_unit_height(const Shape& s) {
  Shape out = s.rank_known && s.rank() == 3 ? s : Shape(std::vector<Dim>(3, Dim::unknown()));
  out.dims.insert(out.dims.begin() + 2, Dim(1));
  return out;
}

// The 1-D attribute (one value, or two pads) with the height's entry in front.
void widen(std::map<std::string, Attribute>& attrs, const std::string& key, int64_t height_value) {
  auto it = attrs.find(key);
  if (it == attrs.end() || it->second.kind() != AttrKind::Ints) return;
  std::vector<int64_t> v = it->second.ints();
  if (key == "pads" && v.size() == 2) v = {height_value, v[0], height_value, v[1]};
  else if (v.size() == 1) v.insert(v.begin(), height_value);
  it->second = v;
}

// Moves the last node of g to just before (or after) `anchor`.
void place(Graph& g, const Node* anchor, bool after) {
  auto& nodes = g.mutable_nodes();
  std::unique_ptr<Node> last = std::move(nodes.back());
  nodes.pop_back();
  auto it = std::find_if(nodes.begin(), nodes.end(), [&](const auto& p) { return p.get() == anchor; });
  nodes.insert(after ? std::next(it) : it, std::move(last));
}

// A Reshape of x to `target` (0: x's dim, -1: the rest), placed before `anchor`.
Value* reshaped_before(Graph& g, Node& anchor, Value* x, const std::vector<int64_t>& target, Shape shape) {
  Value* to = g.add_initializer(g.unique_name(anchor.name + ".shape"),
                                Tensor::from_vector<int64_t>({static_cast<int64_t>(target.size())}, target));
  Node* r = g.add_node("Reshape", {x, to}, {g.unique_name(x->name + ".2d")}, {}, g.unique_name(anchor.name + ".to2d"));
  r->outputs[0]->dtype = x->dtype;
  r->outputs[0]->shape = std::move(shape);
  place(g, &anchor, false);
  return r->outputs[0];
}

void rewrite(Graph& g, Node& n) {
  Value* x = n.inputs[0];
  Value* y = n.outputs[0];
  const Tensor& w = *n.inputs[1]->initializer;
  n.inputs[0] = reshaped_before(g, n, x, {0, 0, 1, -1}, with_unit_height(x->shape));
  if (Value* z = n.input(3)) n.inputs[3] = reshaped_before(g, n, z, {0, 0, 1, -1}, with_unit_height(z->shape));
  Tensor w4(DType::f32, {w.dim(0), w.dim(1), 1, w.dim(2)});
  std::copy(w.data<float>(), w.data<float>() + w.numel(), w4.data<float>());
  n.inputs[1] = g.add_initializer(g.unique_name(n.inputs[1]->name + ".2d"), std::move(w4));
  if (!n.has_attr("kernel_shape")) n.attrs["kernel_shape"] = std::vector<int64_t>{w.dim(2)};
  widen(n.attrs, "kernel_shape", 1);
  widen(n.attrs, "strides", 1);
  widen(n.attrs, "dilations", 1);
  widen(n.attrs, "pads", 0);
  if (n.domain.empty()) {  // a plain Conv takes the fused op's form, as canonicalize would
    n.domain = std::string(ops::kKilnDomain);
    n.op = "FusedConv";
  }
  // The convolution writes a new 4-D value; a Reshape after it makes the old 3-D one.
  Value* y4 = g.add_value(g.unique_name(y->name + ".2d"), y->dtype, with_unit_height(y->shape));
  y4->producer = &n;
  n.outputs[0] = y4;
  Value* to = g.add_initializer(g.unique_name(n.name + ".shape1d"), Tensor::from_vector<int64_t>({3}, {0, 0, -1}));
  Node* back = g.add_node("Reshape", {y4, to}, {""}, {}, g.unique_name(n.name + ".to1d"));
  back->outputs[0] = y;
  y->producer = back;
  place(g, &n, true);
}

}  // namespace

int conv1d_as_2d(Graph& g) {
  std::vector<Node*> convs;
  for (const auto& n : g.nodes())
    if (lowerable_1d(*n)) convs.push_back(n.get());
  for (Node* n : convs) rewrite(g, *n);
  return static_cast<int>(convs.size());
}

}  // namespace kiln::lower
