// The blocked GEMM driver every GEMM-shaped kernel runs on (packed-B MatMul, packed-A
// convolution, implicit-GEMM convolution, sgemm): BLIS-style loops over K blocks (kc), row
// blocks of A (mc) and column blocks of B (nc) around the table's register-tile micro-kernel,
// with the epilogue applied to each C tile right after its last K block (while it is in L1).
// Each operand is either packed ahead of time over the full K (weights) or packed per block
// by a callback (activations, im2col), so the same loops serve every caller.
#pragma once
#include <cstddef>
#include <cstdint>
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/function_ref.h"

namespace kiln::kernels::detail {

using kernels::FunctionRef;

// Packs rows [i0, i0+mc) x depth [p0, p0+kc) of A into mr-row panels, panel stride kc*mr.
using PackABlock = FunctionRef<void(int64_t i0, int64_t mc, int64_t p0, int64_t kc, float* out)>;
// Packs depth [p0, p0+kc) x columns [j0, j0+nc) of B into nr-column panels, panel stride kc*nr.
using PackBBlock = FunctionRef<void(int64_t p0, int64_t kc, int64_t j0, int64_t nc, float* out)>;

// Row pointers of depth [p0, p0+kc) of a B read in place: out[q] = start of row p0 + q.
using BRows = FunctionRef<void(int64_t p0, int64_t kc, const float** out)>;

struct GemmProblem {
  int64_t M = 0, N = 0, K = 0;
  const float* a_packed = nullptr;  // mr-row panels over the full K (panel q at q*K*mr), or
  PackABlock pack_a;                //   packed per block by this when a_packed is null
  // pack_a takes any first row, not only multiples of mr: the driver may then pack a block's
  // short tail with its last whole tile as two panels of about half as many rows each.
  bool a_any_rows = false;
  // Or, with pack_a and a packed B, A read in place by the whole row tiles (row i at a_rows +
  // i * lda; KernelTable::tile_a_rows_col_strip), pack_a packing only a block's tail rows.
  const float* a_rows = nullptr;
  int64_t lda = 0;
  const float* b_packed = nullptr;  // nr-column panels over the full K (panel q at q*K*nr), or
  PackBBlock pack_b;                //   packed per block by this, or
  BRows b_rows;                     //   read in place through row pointers (no packing)
  float* C = nullptr;
  int64_t ldc = 0;
  bool accumulate = false;          // C += product (before the epilogue) instead of C = product
  const Epilogue* epi = nullptr;    // null: none
  // With b_packed: the packed panel (K x nr floats) the caller's next product starts on, which
  // this one's last strip fetches into L2 as its other strips fetch their next panel (null:
  // none). Winograd's 16 products stream 16 weight matrices one after another.
  const float* b_next = nullptr;
  // For pack_b: gemm_b_block_floats() floats per thread (thread t at t * that), or null to use
  // a thread-local buffer (always used with a Rows or Cols split, which makes more parts).
  float* workspace = nullptr;
  // Which dimension the parallel parts cut. Auto: the split whose largest part is smallest.
  // Rows / Cols: only M / N, up to kSplitPartsPerThread parts per thread, so a convolution cuts
  // its output pixels the way every conv kernel does and each thread reads back what it wrote
  // (see kiln/kernels/parallel.h); the extra parts balance a thread that runs slower.
  enum class Split { Auto, Rows, Cols } split = Split::Auto;
  // Called once per part after its last tile, on the thread that computed it, with the part's
  // rows [i0, i1) and columns [j0, j1): the caller finishes that part of the output there.
  FunctionRef<void(int64_t i0, int64_t i1, int64_t j0, int64_t j1)> part_done;
};
constexpr int kSplitPartsPerThread = 4;

// Floats of one thread's B block buffer (packed on the fly).
size_t gemm_b_block_floats(const GemmBlocking& g);
// Threads worth using for an M x N x K product (1 when waking the pool would not pay).
int gemm_threads(int64_t M, int64_t N, int64_t K, bool b_prepacked, int threads);
void gemm_run(const KernelTable& t, const GemmProblem& p, int threads);
// gemm_packed_b_on (kiln/kernels/dispatch.h) whose last strip fetches b_next (GemmProblem::b_next).
void gemm_packed_b_then(const KernelTable& t, int64_t M, int64_t N, int64_t K, const float* A, int64_t lda,
                        const float* packed_b, float* C, int64_t ldc, const Epilogue& epi, int threads,
                        const float* b_next);
// C[0:N] = epilogue(a[0:K] · packed B) for one row of A (KernelTable::gemv_panels), the panels
// split over the threads gemm_threads gives a streamed product, each part's epilogue on its
// thread. False when the table has no GEMV kernel (the caller runs gemm_run).
bool gemv_run(const KernelTable& t, int64_t N, int64_t K, const float* a, const float* packed_b, float* C,
              const Epilogue* epi, int threads);

// Packers (scalar code: they move data, the micro-kernel computes). Zero-pad to whole panels.
// op(A) element (i, p) is A[i*lda + p], or A[p*lda + i] when trans; scaled by alpha.
// (Untransposed, unscaled A goes through the table's vectorised pack_a_panel.)
void pack_a_panels(const KernelTable& t, const float* A, int64_t lda, bool trans, float alpha, int64_t M, int64_t i0,
                   int64_t mc, int64_t p0, int64_t kc, float* out);
// op(B) element (p, j) is B[p*ldb + j], or B[j*ldb + p] when trans.
void pack_b_panels(const float* B, int64_t ldb, bool trans, int64_t N, int64_t p0, int64_t kc, int64_t j0, int64_t nc,
                   int nr, float* out);

// The epilogue for the C tile whose first element is (row, col).
TileEpilogue tile_epilogue(const Epilogue& e, int64_t row, int64_t col);
bool epilogue_is_identity(const Epilogue& e);

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

}  // namespace kiln::kernels::detail
