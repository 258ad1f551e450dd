// Which ops may share memory with their inputs. A small table, not a property of the op table:
// it is a promise about how *kernels* access memory, so the lowering that picks kernels may
// extend or override it (set_memory_effect).
//
// InPlace promises that output element i is computed from input elements at index i only
// (after broadcasting) and that every input element i is read before output element i is
// written; the reference kernels of the ops below keep it (ops/elementwise/broadcast.h).
#include <map>
#include <mutex>
#include <string>

#include "kiln/plan/plan.h"

namespace kiln::plan {
namespace {

using Key = std::pair<std::string, std::string>;  // (domain, op)

std::map<Key, MemoryEffect, std::less<>> defaults() {
  std::map<Key, MemoryEffect, std::less<>> t;
  for (const char* op : {"Abs",   "Acos",  "Acosh",    "Asin",      "Asinh",       "Atan",      "Atanh",
                         "Ceil",  "Celu",  "Cos",      "Cosh",      "Elu",         "Erf",       "Exp",
                         "Floor", "Gelu",  "HardSigmoid", "HardSwish", "LeakyRelu", "Log",       "Mish",
                         "Neg",   "Not",   "Reciprocal", "Relu",    "Round",       "Selu",      "Sigmoid",
                         "Sign",  "Sin",   "Sinh",     "Softplus",  "Softsign",    "Sqrt",      "Tan",
                         "Tanh",  "ThresholdedRelu",
                         // binary / n-ary with broadcasting, and selections
                         "Add",   "Sub",   "Mul",      "Div",       "Pow",         "Max",       "Min",
                         "Sum",   "Mean",  "Mod",      "PRelu",     "And",         "Or",        "Xor",
                         "BitShift", "Where", "Clip"})
    t[{"", op}] = MemoryEffect::InPlace;
  t[{"kiln", "FusedElementwise"}] = MemoryEffect::InPlace;
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity"}) t[{"", op}] = MemoryEffect::View;
  return t;
}

struct Table {
  std::mutex mu;
  std::map<Key, MemoryEffect, std::less<>> effects = defaults();
};

Table& table() {
  static Table t;
  return t;
}

}  // namespace

MemoryEffect memory_effect(std::string_view domain, std::string_view op) {
  Table& t = table();
  std::lock_guard<std::mutex> lk(t.mu);
  auto it = t.effects.find(Key{std::string(domain), std::string(op)});
  return it == t.effects.end() ? MemoryEffect::None : it->second;
}

// A node marked `in_place` carries its kernel's own promise that writing its output over an
// input of the same dtype and dims is safe, though not index by index (a depthwise
// convolution copies each block of its input before writing it).
MemoryEffect memory_effect(const Node& n) {
  if (n.attr_i("in_place", 0) != 0) return MemoryEffect::InPlace;
  return memory_effect(n.domain, n.op);
}

void set_memory_effect(std::string_view domain, std::string_view op, MemoryEffect e) {
  Table& t = table();
  std::lock_guard<std::mutex> lk(t.mu);
  t.effects[Key{std::string(domain), std::string(op)}] = e;
}

std::string_view value_kind_name(ValueKind k) {
  switch (k) {
    case ValueKind::Input: return "input";
    case ValueKind::Weight: return "weight";
    case ValueKind::Arena: return "arena";
    case ValueKind::View: return "view";
    case ValueKind::Dynamic: return "dynamic";
    case ValueKind::Output: return "output";
  }
  return "?";
}

}  // namespace kiln::plan
