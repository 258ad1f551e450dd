#include "kiln/analysis/compare.h"

#include <cmath>
#include <cstdio>

namespace kiln {

std::string Comparison::str() const {
  char buf[200];
  std::snprintf(buf, sizeof buf, "max|diff|=%.3g max|ref|=%.3g cos=%.6f mismatches=%lld%s", max_abs_diff,
                max_abs_ref, cosine, static_cast<long long>(mismatches), nan_mismatch ? " (NaN mismatch)" : "");
  return buf;
}

Comparison compare_tensors(const Tensor& a, const Tensor& b, double rel_tol, double abs_tol) {
  Comparison c;
  c.same_shape = a.dims() == b.dims();
  c.same_dtype = a.dtype() == b.dtype();
  if (!c.same_shape) return c;
  int64_t n = a.numel();
  bool exact = !dtype_is_float(b.dtype());
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < n; ++i) {
    double x = a.as_double(i), y = b.as_double(i);
    if (std::isnan(x) || std::isnan(y)) {
      if (std::isnan(x) != std::isnan(y)) c.nan_mismatch = true;
      continue;
    }
    if (std::isinf(x) || std::isinf(y)) {
      if (x != y) c.nan_mismatch = true;
      continue;
    }
    double d = std::fabs(x - y);
    c.max_abs_diff = std::max(c.max_abs_diff, d);
    c.max_abs_ref = std::max(c.max_abs_ref, std::fabs(y));
    dot += x * y;
    na += x * x;
    nb += y * y;
    if (exact && x != y) ++c.mismatches;
  }
  c.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / std::sqrt(na * nb);
  double tol = rel_tol * c.max_abs_ref + abs_tol;
  if (!exact) {
    for (int64_t i = 0; i < n; ++i) {
      double x = a.as_double(i), y = b.as_double(i);
      if (!std::isnan(x) && !std::isnan(y) && std::fabs(x - y) > tol) ++c.mismatches;
    }
  }
  c.ok = c.same_dtype && !c.nan_mismatch && c.mismatches == 0;
  return c;
}

}  // namespace kiln
