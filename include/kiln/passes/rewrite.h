// The rewrite API for local graph rewrites: the built-in passes use it, and so can user passes
// loaded as plugins (samples/passes/).
//
// A RewritePattern names the op types it is rooted at, has a cheap `match` that returns a
// Decision (with the reason when it declines), and an `apply` that builds the replacement with
// a Rewriter: create nodes and constants just before the root, point the uses of old values at
// new ones, erase what died. A PatternPass runs a set of patterns in one traversal of the
// graph, indexed by op type (after ONNX Runtime's rewrite rules), and repeats the traversal
// until nothing matches any more. Nodes stay in topological order.
//
//   class ReluToGelu : public RewritePattern {
//     std::vector<std::string> root_ops() const override { return {"Relu"}; }
//     Decision match(const Node&, const Model&) const override { return Decision::yes(); }
//     void apply(Node& relu, Rewriter& rw) const override {
//       Node* gelu = rw.create("Gelu", {relu.inputs[0]});
//       rw.replace(relu.outputs[0], gelu->outputs[0]);
//     }
//   };
#pragma once
#include <map>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "kiln/passes/pass.h"

namespace kiln::passes {

// ---- queries pattern code often needs ---------------------------------------------
// The initializer data of v, or nullptr when v is not a constant.
const Tensor* constant_of(const Value* v);
// True when v is one of the outputs of the graph that defines it.
bool is_graph_output(const Value* v);
// Nodes reading v (in v's graph; a node whose subgraph reads v counts once), plus whether v
// is a graph output. O(nodes): fine in apply, use sparingly in match.
std::vector<Node*> users_of(const Value* v);
// v has exactly one reader node and is not a graph output.
bool has_single_use(const Value* v);
// True when Rewriter::replace(from, to) needs no Identity to keep from's name as a graph output.
bool can_replace_without_copy(const Value* from, const Value* to);

// Builds replacements for one matched root. Created nodes are inserted just before the
// insertion point (the root, unless moved), so their inputs must be defined before it.
class Rewriter {
 public:
  Rewriter(Model& model, Graph& graph, Node* insertion_point);

  Model& model() { return *model_; }
  Graph& graph() { return *graph_; }
  void set_insertion_point(Node* before) { before_ = before; }

  // A new node of `op` reading `inputs`, with `num_outputs` outputs named from the op
  // (unique in the graph). Its output dtypes and shapes are inferred right away when the op
  // is in the op table. Attributes as in Graph::add_node.
  Node* create(const std::string& op, const std::vector<Value*>& inputs,
               std::map<std::string, Attribute> attrs = {}, size_t num_outputs = 1,
               const std::string& domain = "");
  // A new initializer holding t, named from `base`.
  Value* constant(const std::string& base, Tensor t);
  // Turns v (a node output) into an initializer holding t, keeping its name and uses; its
  // producer loses that output (and is erased by erase_if_dead when nothing else is used).
  void make_constant(Value* v, Tensor t);

  // Every use of `from` (nodes, subgraphs, graph outputs) reads `to` instead. When `from` is
  // an output of the graph its name is kept: `to` takes it over when `to` is made by a node of
  // this graph and is not itself an output; otherwise `from` becomes Identity(to).
  void replace(Value* from, Value* to);

  // Erases n when none of its outputs is used, then the producers of its inputs that died
  // with it (in this graph). Returns the number of nodes erased.
  size_t erase_if_dead(Node* n);
  // Erases n; throws if one of its outputs is still used.
  void erase(Node* n);

  // How many nodes this rewriter created and erased.
  size_t created() const { return created_; }
  size_t erased() const { return erased_; }
  bool was_erased(const Node* n) const { return erased_nodes_.count(n) != 0; }

 private:
  void insert_before_point(Node* n);
  void infer(Node& n);
  void take_over_name(Value* from, Value* to);

  Model* model_;
  Graph* graph_;
  Node* before_;
  size_t created_ = 0, erased_ = 0;
  std::unordered_set<const Node*> erased_nodes_;
};

class RewritePattern {
 public:
  virtual ~RewritePattern() = default;
  // Short name for remarks ("conv-bn").
  virtual std::string name() const = 0;
  // Op types (default ONNX domain unless root_domain says otherwise) this pattern is rooted at.
  virtual std::vector<std::string> root_ops() const = 0;
  virtual std::string root_domain() const { return ""; }
  // Cheap check: yes, or no with the reason (reported by --explain). Must not change the graph.
  virtual Decision match(const Node& root, const Model& model) const = 0;
  // Builds the replacement. The root is erased afterwards when it is dead.
  virtual void apply(Node& root, Rewriter& rw) const = 0;
  // Text for the applied remark; default "<name>".
  virtual std::string describe_apply(const Node& root) const { return name(); }
};

// A pass made of rewrite patterns, run in one traversal per round, indexed by root op.
class PatternPass : public Pass {
 public:
  PatternPass(std::string name, std::string summary) : name_(std::move(name)), summary_(std::move(summary)) {}
  void add(std::unique_ptr<RewritePattern> p) { patterns_.push_back(std::move(p)); }
  std::string_view name() const override { return name_; }
  std::string_view summary() const override { return summary_; }
  // Runs in the main graph and in every subgraph; rounds repeat (at most max_rounds) while a
  // pattern applied, so a rewrite can expose another.
  bool run(Model& m, PassContext& ctx) override;
  void set_max_rounds(int r) { max_rounds_ = r; }

 private:
  bool run_graph(Model& m, Graph& g, PassContext& ctx);
  std::string name_, summary_;
  std::vector<std::unique_ptr<RewritePattern>> patterns_;
  int max_rounds_ = 8;
};

// Snapshot of a graph's nodes, safe to iterate while a Rewriter erases some (check was_erased).
inline std::vector<Node*> node_list(const Graph& g) {
  std::vector<Node*> out;
  out.reserve(g.nodes().size());
  for (const auto& n : g.nodes()) out.push_back(n.get());
  return out;
}

}  // namespace kiln::passes
