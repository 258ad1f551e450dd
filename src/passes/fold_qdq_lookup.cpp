// fold-qdq-lookup: an element-wise chain between a DequantizeLinear of an 8-bit tensor and its
// end (a QuantizeLinear, or any other reader) becomes one kiln.QLookup: the input has only 256
// possible values, so the chain is a 256-entry table, computed once here with the op table's
// reference kernels.
//
//   Q(Mul(DQ(xq), Sigmoid(DQ(xq))))   -> kiln.QLookup(xq, u8[256])   (a SiLU between quantized
//                                                                      convolutions, efficientnet)
//   Mul(DQ(xq), Sigmoid(DQ(xq))) -> f  -> kiln.QLookup(xq, f32[256]) (f read by a pooling, say)
//
// The chain (the region) is every node reachable from the DequantizeLinear's output through
// element-wise ops whose other inputs are scalar constants or values of the region; exactly one
// of its values may be read outside it (or be a graph output), and it must have the input's
// shape. When every reader of that value is a QuantizeLinear with the same per-tensor
// parameters, the table holds the quantized bytes and replaces the QuantizeLinear's output;
// otherwise it holds floats and replaces the value.
//
// Numerics: the table is the reference interpreter's result for each input byte, so the lookup
// equals the interpreter's chain exactly. (The compiled chain's vector sigmoid could round a few
// bytes one step differently.) Before it: a DQ -> FusedElementwise -> Q chain was three passes
// over f32 tensors, most of efficientnet_b0's int8 run time.
#include <algorithm>
#include <map>
#include <set>

#include "builtin_passes.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "kiln/passes/rewrite.h"

namespace kiln::passes {
namespace {

// ONNX element-wise ops whose result depends only on their inputs' elements at the same index
// (and attributes): a chain of them is a function of one byte when every input is.
bool elementwise_op(const Node& n) {
  static const std::set<std::string> kOps = {
      "Abs",     "Add",       "Ceil",        "Celu",     "Clip",    "Cos",      "Div",       "Elu",
      "Erf",     "Exp",       "Floor",       "Gelu",     "HardSigmoid", "HardSwish", "LeakyRelu", "Log",
      "Max",     "Min",       "Mish",        "Mul",      "Neg",     "Pow",      "Reciprocal", "Relu",
      "Round",   "Selu",      "Sigmoid",     "Sign",     "Sin",     "Softplus", "Softsign",  "Sqrt",
      "Sub",     "Tanh",      "ThresholdedRelu"};
  return n.domain.empty() && kOps.count(n.op) != 0 && n.outputs.size() == 1;
}

bool is_op(const Node* n, std::string_view op) { return n && n->domain.empty() && n->op == op; }

// A per-tensor QuantizeLinear/DequantizeLinear: scalar constant scale and (optional) zero point.
bool per_tensor(const Node& n) {
  const Tensor* s = constant_of(n.input(1));
  if (!s || s->numel() != 1 || s->dtype() != DType::f32) return false;
  if (const Value* z = n.input(2)) {
    const Tensor* t = constant_of(z);
    if (!t || t->numel() != 1) return false;
  }
  return true;
}

// The same per-tensor parameters (scale, zero point and its dtype).
bool same_params(const Node& a, const Node& b) {
  const Tensor* sa = constant_of(a.input(1));
  const Tensor* sb = constant_of(b.input(1));
  if (sa->data<float>()[0] != sb->data<float>()[0]) return false;
  const Tensor* za = a.input(2) ? constant_of(a.input(2)) : nullptr;
  const Tensor* zb = b.input(2) ? constant_of(b.input(2)) : nullptr;
  if (!za || !zb) return !za && !zb;
  return za->dtype() == zb->dtype() && za->as_int64(0) == zb->as_int64(0);
}

struct Region {
  std::vector<Node*> nodes;  // graph order
  Value* exit = nullptr;     // the one value read outside the region
  std::vector<Node*> quantizers;  // the exit's readers when they are all matching QuantizeLinears
};

// The region of DequantizeLinear d, or the reason there is none.
Decision find_region(const Node& d, Region& r) {
  const Value* x = d.input(0);
  if (!x || constant_of(x)) return Decision::no("dequantizes a constant (weights stay int8)");
  if (x->dtype != DType::u8 && x->dtype != DType::i8) return Decision::no("input is not u8/i8");
  if (!per_tensor(d)) return Decision::no("not per tensor");
  Value* start = d.outputs[0];
  if (!start || start->dtype != DType::f32 || !start->shape.rank_known)
    return Decision::no("output is not an f32 tensor of known rank");
  // Grow the region to a fixpoint: a reader joins once every non-constant input is in it.
  std::set<const Value*> inside = {start};
  std::set<const Node*> members;
  bool grew = true;
  while (grew) {
    grew = false;
    for (const Value* v : std::vector<const Value*>(inside.begin(), inside.end()))
      for (Node* u : users_of(v)) {
        if (members.count(u) || !elementwise_op(*u) || !u->subgraphs().empty()) continue;
        bool ok = u->outputs[0] && u->outputs[0]->dtype == DType::f32;
        for (const Value* in : u->inputs) {
          if (!ok || !in) continue;
          const Tensor* c = constant_of(in);
          ok = inside.count(in) || (c && c->numel() == 1 && c->dtype() == DType::f32);
        }
        if (!ok) continue;
        members.insert(u);
        inside.insert(u->outputs[0]);
        grew = true;
      }
  }
  if (members.empty()) return Decision::no("no element-wise op reads it");
  // Exactly one value leaves the region, and it is not the dequantized input itself.
  for (const Value* v : inside) {
    bool outside = is_graph_output(v);
    for (Node* u : users_of(v)) outside = outside || !members.count(u);
    if (!outside) continue;
    if (r.exit) return Decision::no("more than one of its values is read outside the element-wise chain");
    r.exit = const_cast<Value*>(v);
  }
  if (!r.exit) return Decision::no("the chain's result is not used");
  if (r.exit == start) return Decision::no("the dequantized input is also read outside the chain");
  if (!r.exit->shape.rank_known || r.exit->shape != start->shape)
    return Decision::no("the chain's result does not have the input's shape");
  for (const auto& n : d.owner->nodes())
    if (members.count(n.get())) r.nodes.push_back(n.get());
  // Readers that are all QuantizeLinear with one set of per-tensor parameters: the table is theirs.
  if (!is_graph_output(r.exit)) {
    std::vector<Node*> readers = users_of(r.exit);
    bool all_q = !readers.empty();
    for (Node* q : readers)
      all_q = all_q && is_op(q, "QuantizeLinear") && q->input(0) == r.exit && per_tensor(*q) && same_params(*q, *readers[0]);
    if (all_q) r.quantizers = readers;
  }
  return Decision::yes();
}

// Runs node n's reference kernel on `inputs` (region values by value, the rest constants).
Tensor run_node(const Node& n, const std::map<const Value*, Tensor>& values, int64_t opset) {
  const ops::OpDef* def = ops::find_op(n.domain, n.op);
  KILN_CHECK(def && def->kernel, n.describe(), ": no reference kernel");
  std::vector<const Tensor*> ins;
  for (const Value* v : n.inputs) {
    auto it = v ? values.find(v) : values.end();
    ins.push_back(it != values.end() ? &it->second : v ? constant_of(v) : nullptr);
  }
  ops::KernelContext kc(n, opset, std::move(ins));
  def->kernel(kc);
  return std::move(kc.outputs()[0]);
}

// The chain's result for each of the 256 input bytes, in increasing value order.
Tensor region_table(const Node& d, const Region& r, int64_t opset) {
  const bool is_signed = d.input(0)->dtype == DType::i8;
  Tensor bytes(is_signed ? DType::i8 : DType::u8, {256});
  for (int i = 0; i < 256; ++i) static_cast<uint8_t*>(bytes.raw())[i] = static_cast<uint8_t>(is_signed ? i ^ 0x80 : i);
  std::map<const Value*, Tensor> values;
  values[d.input(0)] = bytes;
  values[d.outputs[0]] = run_node(d, values, opset);
  for (const Node* n : r.nodes) values[n->outputs[0]] = run_node(*n, values, opset);
  if (r.quantizers.empty()) return values.at(r.exit);
  return run_node(*r.quantizers[0], values, opset);
}

class ChainToLookup : public RewritePattern {
 public:
  std::string name() const override { return "chain-to-lookup"; }
  std::vector<std::string> root_ops() const override { return {"DequantizeLinear"}; }
  Decision match(const Node& d, const Model& m) const override {
    Region r;
    if (Decision dec = find_region(d, r); !dec) return dec;
    try {
      (void)region_table(d, r, m.opset(""));
    } catch (const Error& e) {
      return Decision::no(str_cat("evaluating the chain failed: ", e.what()));
    }
    return Decision::yes();
  }
  void apply(Node& d, Rewriter& rw) const override {
    Region r;
    find_region(d, r);
    Tensor table = region_table(d, r, rw.model().opset(""));
    Node* last = r.nodes.back();
    rw.model().opsets[std::string(ops::kKilnDomain)] = ops::kKilnOpsetVersion;
    Node* lookup = rw.create("QLookup", {d.inputs[0], rw.constant(last->name + ".table", std::move(table))}, {}, 1,
                             std::string(ops::kKilnDomain));
    lookup->name = last->name;
    if (r.quantizers.empty()) {
      rw.replace(r.exit, lookup->outputs[0]);
    } else {
      for (Node* q : r.quantizers) rw.replace(q->outputs[0], lookup->outputs[0]);
      for (Node* q : r.quantizers) rw.erase_if_dead(q);
    }
    for (auto it = r.nodes.rbegin(); it != r.nodes.rend(); ++it)
      if (!rw.was_erased(*it)) rw.erase_if_dead(*it);
  }
  std::string describe_apply(const Node& d) const override {
    return "element-wise chain after " + d.name + " as a 256-entry table";
  }
};

}  // namespace

std::unique_ptr<Pass> make_fold_qdq_lookup() {
  auto p = std::make_unique<PatternPass>(
      "fold-qdq-lookup", "element-wise chains of dequantized 8-bit tensors -> kiln.QLookup (a 256-entry table)");
  p->add(std::make_unique<ChainToLookup>());
  return p;
}

}  // namespace kiln::passes
