// Ridge-regularised linear least squares by the normal equations, for the pruning
// reconstruction: find W (targets x features, plus a bias column) minimising
//   sum over rows ||y - W [x; 1]||^2 + lambda ||W_features||^2,
// lambda = ridge x the mean of diag(X^T X) (scale-free; the bias is not penalised).
// X^T X and X^T Y are accumulated in double from float products over chunks of rows (each chunk
// a float GEMM of at most kChunk rows, so the float sums are short); the solve (Cholesky) is in double.
// squared_error evaluates any W on the accumulated rows from the sums alone (G W in float, the
// rest in double), so a W fitted on some rows can be scored on others.
#pragma once
#include <cstdint>
#include <vector>

namespace kiln::compress {

class NormalEquations {
 public:
  static constexpr int64_t kChunk = 512;
  NormalEquations(int64_t features, int64_t targets, bool bias);
  // `rows` rows of x (rows x features, row-major) and y (rows x targets); any count of rows.
  void add(const float* x, const float* y, int64_t rows);
  // W as targets x (features + bias) in double, row-major; the bias (when used) is the last column.
  // Raises lambda tenfold until the Cholesky factorisation succeeds.
  std::vector<double> solve(double ridge) const;
  // sum over rows ||y - W [x; 1]||^2 for a W laid out as solve() returns it.
  double squared_error(const std::vector<double>& w) const;
  double squared_total() const { return yy_; }  // sum ||y||^2
  // Adds another accumulation of the same problem (rows of both).
  void merge(const NormalEquations& o);
  int64_t rows() const { return rows_; }
  int64_t unknowns() const { return d_; }       // per target: features (+1)

 private:
  int64_t features_, targets_, d_;
  bool bias_;
  std::vector<double> g_, r_;  // d x d, d x targets
  double yy_ = 0;
  int64_t rows_ = 0;
};

}  // namespace kiln::compress
