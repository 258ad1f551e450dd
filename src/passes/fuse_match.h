// Small graph queries and edits shared by the fusion passes: constants (initializers and
// Constant nodes alike), users, operand matching of commutative ops, and replacing a matched
// group of nodes by one node that takes over the group's output value (so names, shapes and
// graph outputs stay as they were).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::passes::fuse {

// ---- queries
// The data of v when it is known at compile time: an initializer, or the `value` of the
// Constant node producing it. nullptr otherwise.
const Tensor* constant_value(const Value* v);
bool is_constant(const Value* v);
// The one element of a constant as a double (any numeric dtype); nullopt otherwise.
std::optional<double> scalar_constant(const Value* v);
// True when a constant v holds exactly one element equal to `want` within relative `rtol`.
bool is_scalar(const Value* v, double want, double rtol = 1e-4);

bool is_graph_output(const Value* v);
// Nodes of v's graph reading v (a node reading it twice counts once).
std::vector<Node*> users(const Value* v);
// v is not a graph output and every node reading it is in `allowed`.
bool used_only_by(const Value* v, const std::set<const Node*>& allowed);
// The single node reading v, when v is no graph output and has exactly one reader.
Node* single_user(const Value* v);

// The producer of v when it is the ONNX op `op` (nullptr otherwise).
Node* produced_by(const Value* v, std::string_view op);
bool is_onnx(const Node& n, std::string_view op);
// For a binary node reading `v` as one operand: the other operand (nullptr when n does not
// read v as input 0 or 1, or reads it as both).
Value* other_operand(const Node& n, const Value* v);
// Operands of a commutative binary node split as (the constant, the other); nullopt when
// neither or both are constant.
std::optional<std::pair<Value*, Value*>> split_constant(const Node& n);

// One output element from the same-index elements of its (broadcast) inputs: unary math and
// activations, binary/variadic arithmetic with broadcasting, Where, Clip, Cast, PRelu. Not
// Softmax, reductions or data movement.
bool is_elementwise(const Node& n);
// Float dtypes the fused ops compute (through f32).
bool is_fusable_float(DType t);
// Every dim known (static or symbolic).
bool fully_known(const Shape& s);

// ---- edits
// Appends a node and moves it just before `anchor` in the node order.
Node* insert_before(Graph& g, Node* anchor, const std::string& op, const std::vector<Value*>& inputs,
                    const std::vector<std::string>& output_names, std::map<std::string, Attribute> attrs = {},
                    const std::string& name = "", const std::string& domain = "");
// `n` takes over `v` as its output `i` (v keeps its name, shape and uses); v's old producer
// gets a fresh unused value instead and is left for remove_dead.
void take_over(Node* n, size_t i, Value* v);
// Removes the nodes of `candidates` whose outputs are unused (repeatedly, so chains go too,
// and Constant nodes that fed only them). Returns the removed nodes: addresses only, for
// callers that must skip them later (they are freed).
std::vector<const Node*> remove_dead(Graph& g, const std::vector<Node*>& candidates);
// Replaces `group` (whose value `out` is read outside it) by one new node computing `out`:
// inserted before the group's last node, named like `name_from` (a group node), the group's
// nodes that died removed. `removed` (optional) collects their addresses.
Node* replace_group(Graph& g, const std::vector<Node*>& group, Value* out, const std::string& op,
                    const std::vector<Value*>& inputs, std::map<std::string, Attribute> attrs,
                    const std::string& domain, const Node& name_from, std::vector<const Node*>* removed = nullptr);
// The node of `nodes` that comes last in g's node order.
Node* last_in_order(const Graph& g, const std::vector<Node*>& nodes);
// Restores topological order (stable: nodes already in order keep it). Throws on a cycle.
void topo_sort(Graph& g);
// Declares the kiln domain (version 1) in the model, as every pass that makes kiln ops must.
void import_kiln_domain(Model& m);
// A new f32 initializer named after `base`.
Value* add_f32_constant(Graph& g, const std::string& base, std::vector<int64_t> dims, const std::vector<float>& v);

}  // namespace kiln::passes::fuse
