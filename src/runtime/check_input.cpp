// Input checking shared by the reference interpreter and the compiled runtime.
#include "kiln/runtime/interpreter.h"

namespace kiln {

void check_input(const Value& decl, const Tensor& t, DimBindings& bound, const DimRanges& ranges) {
  auto expected = [&] { return str_cat(dtype_name(decl.dtype), decl.shape.str()); };
  auto actual = [&] { return str_cat(dtype_name(t.dtype()), dims_str(t.dims())); };
  KILN_CHECK(decl.dtype == DType::undefined || decl.dtype == t.dtype(), "input '", decl.name, "': expected ",
             expected(), ", got ", actual(), " (wrong dtype)");
  if (!decl.shape.rank_known) return;
  KILN_CHECK(decl.shape.rank() == t.rank(), "input '", decl.name, "': expected ", expected(), ", got ", actual(),
             " (rank ", t.rank(), " instead of ", decl.shape.rank(), ")");
  for (size_t i = 0; i < t.rank(); ++i) {
    const Dim& d = decl.shape.dims[i];
    if (d.is_static()) {
      KILN_CHECK(d.value == t.dim(i), "input '", decl.name, "': expected ", expected(), ", got ", actual(),
                 " (dim ", i, " is ", t.dim(i), ", must be ", d.value, ")");
    } else if (d.is_symbolic()) {
      auto r = ranges.find(d.symbol);
      if (r != ranges.end())
        KILN_CHECK(t.dim(i) >= r->second.min && t.dim(i) <= r->second.max, "input '", decl.name, "': expected ",
                   expected(), " with ", d.symbol, " in ", r->second.min, "..", r->second.max, ", got ", actual(),
                   " (", d.symbol, "=", t.dim(i), " is out of range)");
      auto [it, fresh] = bound.emplace(d.symbol, t.dim(i));
      KILN_CHECK(fresh || it->second == t.dim(i), "input '", decl.name, "': expected ", expected(), ", got ",
                 actual(), " (", d.symbol, " is ", it->second, " in another input)");
    }
  }
}

}  // namespace kiln
