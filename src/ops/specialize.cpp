#include "kiln/ops/specialize.h"

#include <algorithm>

#include "kiln/ops/op.h"

namespace kiln::ops {

std::vector<std::string> input_dim_symbols(const Graph& g) {
  std::vector<std::string> out;
  for (const Value* v : g.inputs)
    for (const Dim& d : v->shape.dims)
      if (d.is_symbolic() && std::find(out.begin(), out.end(), d.symbol) == out.end()) out.push_back(d.symbol);
  return out;
}

namespace {
std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "(none)" : s;
}
}  // namespace

DimBindings specialize_inputs(Model& m, const InputSpec& spec) {
  Graph& g = *m.graph;
  std::vector<std::string> symbols = input_dim_symbols(g);
  DimBindings bindings;
  for (const auto& [name, value] : spec.dims) {
    KILN_CHECK(std::find(symbols.begin(), symbols.end(), name) != symbols.end(), "--dim ", name,
               ": the model's inputs have no dim named '", name, "' (their symbolic dims: ", join(symbols), ")");
    KILN_CHECK(value >= 0, "--dim ", name, ": negative size ", value);
    bindings[name] = value;
  }
  for (const auto& entry : spec.shapes) {
    const std::string& input = entry.first;  // (not a structured binding: lambdas capture it)
    const std::vector<int64_t>& dims = entry.second;
    auto it = std::find_if(g.inputs.begin(), g.inputs.end(), [&](const Value* v) { return v->name == input; });
    if (it == g.inputs.end()) {
      std::vector<std::string> names;
      for (const Value* v : g.inputs) names.push_back(v->name);
      throw Error(str_cat("--shape ", input, ": the model has no input named '", input, "' (inputs: ", join(names), ")"));
    }
    Value* v = *it;
    std::string want = str_cat(v->name, " is declared ", dtype_name(v->dtype), v->shape.str());
    if (v->shape.rank_known) {
      KILN_CHECK(v->shape.rank() == dims.size(), "--shape ", input, "=", dims_str(dims), ": rank ", dims.size(),
                 " does not match: ", want);
      for (size_t i = 0; i < dims.size(); ++i) {
        const Dim& d = v->shape.dims[i];
        if (d.is_static())
          KILN_CHECK(d.value == dims[i], "--shape ", input, "=", dims_str(dims), ": dim ", i, " must be ", d.value,
                     ": ", want);
        if (d.is_symbolic()) {
          auto [b, fresh] = bindings.emplace(d.symbol, dims[i]);
          KILN_CHECK(fresh || b->second == dims[i], "--shape ", input, "=", dims_str(dims), ": sets ", d.symbol, "=",
                     dims[i], " but it is already ", b->second);
        }
      }
    }
    v->shape = Shape::of(dims);
  }
  infer_shapes(m, bindings);
  return bindings;
}

}  // namespace kiln::ops
