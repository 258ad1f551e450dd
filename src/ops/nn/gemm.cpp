// Gemm: Y = alpha * op(A) * op(B) + beta * C, with C broadcast to [M, N].
#include "kiln/kernels/gemm.h"
#include "nn_common.h"

namespace kiln::ops {
namespace {

void infer_gemm(InferContext& c) {
  const Shape& a = c.in_shape(0);
  const Shape& b = c.in_shape(1);
  bool ta = c.node().attr_i("transA", 0) != 0, tb = c.node().attr_i("transB", 0) != 0;
  if ((a.rank_known && a.rank() != 2) || (b.rank_known && b.rank() != 2))
    c.fail(str_cat("A ", a.str(), " and B ", b.str(), " must be 2-D"));
  Dim M = a.rank_known ? a[ta ? 1 : 0] : Dim::unknown(), N = b.rank_known ? b[tb ? 0 : 1] : Dim::unknown();
  if (a.rank_known && b.rank_known) {
    const Dim &ka = a[ta ? 0 : 1], &kb = b[tb ? 1 : 0];
    if (ka.is_static() && kb.is_static() && ka.value != kb.value)
      c.fail(str_cat("inner dims differ: A ", a.str(), (ta ? " (transposed)" : ""), " and B ", b.str(),
                     (tb ? " (transposed)" : "")));
  }
  if (c.has_input(2) && c.in_shape(2).rank_known) {
    const Shape& cs = c.in_shape(2);
    Shape mn(std::vector<Dim>{M, N});
    auto bc = broadcast_shapes(mn, cs);
    if (cs.rank() > 2 || !bc) c.fail(str_cat("C ", cs.str(), " does not broadcast to [M, N] = ", mn.str()));
  }
  c.set_output(0, c.in_dtype(0), Shape(std::vector<Dim>{M, N}));
}

Cost cost_gemm(const CostContext& c) {
  bool ta = c.node.attr_i("transA", 0) != 0;
  const auto& a = c.in_dims[0];
  double M = static_cast<double>(c.out_dims[0][0]), N = static_cast<double>(c.out_dims[0][1]);
  double K = static_cast<double>(a[ta ? 0 : 1]);
  Cost k;
  k.flops = 2 * M * N * K + (c.node.input(2) ? 2 * M * N : 0.0);
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

template <typename T>
Tensor gemm(const KernelContext& c, const Tensor& A, const Tensor& B, const Tensor* C) {
  const Node& n = c.node();
  bool ta = n.attr_i("transA", 0) != 0, tb = n.attr_i("transB", 0) != 0;
  KILN_CHECK(A.rank() == 2 && B.rank() == 2, n.describe(), ": A ", dims_str(A.dims()), " and B ", dims_str(B.dims()),
             " must be 2-D");
  int64_t M = A.dim(ta ? 1 : 0), K = A.dim(ta ? 0 : 1), N = B.dim(tb ? 0 : 1);
  KILN_CHECK(B.dim(tb ? 1 : 0) == K, n.describe(), ": inner dims differ: A ", dims_str(A.dims()), " and B ",
             dims_str(B.dims()));
  T alpha = static_cast<T>(n.attr_f("alpha", 1.f)), beta = static_cast<T>(n.attr_f("beta", 1.f));
  Tensor Y(A.dtype(), {M, N});
  T* y = Y.data<T>();
  bool has_c = C != nullptr && beta != T(0);
  if (has_c) {
    KILN_CHECK(C->rank() <= 2, n.describe(), ": C ", dims_str(C->dims()), " must have rank <= 2");
    std::vector<int64_t> cd = C->dims();
    cd.insert(cd.begin(), 2 - cd.size(), 1);
    KILN_CHECK((cd[0] == M || cd[0] == 1) && (cd[1] == N || cd[1] == 1), n.describe(), ": C ",
               dims_str(C->dims()), " does not broadcast to [", M, ",", N, "]");
    const T* cv = C->data<T>();
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) y[i * N + j] = beta * cv[(cd[0] == 1 ? 0 : i) * cd[1] + (cd[1] == 1 ? 0 : j)];
  }
  if constexpr (std::is_same_v<T, float>) {
    kernels::sgemm(ta, tb, M, N, K, alpha, A.data<float>(), A.dim(1), B.data<float>(), B.dim(1), has_c ? 1.f : 0.f, y,
                   N, c.threads());
  } else {
    std::vector<T> prod(M * N);
    nn::matmul<T>(ta, tb, M, N, K, A.data<T>(), B.data<T>(), prod.data(), false, 1);
    for (int64_t i = 0; i < M * N; ++i) y[i] = static_cast<T>(alpha * prod[i] + (has_c ? y[i] : T(0)));
  }
  return Y;
}

void gemm_kernel(KernelContext& c) {
  DType dt = c.input(0).dtype();
  Tensor A = nn::compute_input(c.input(0)), B = nn::compute_input(c.input(1));
  std::optional<Tensor> C;
  if (c.has_input(2)) C = nn::compute_input(c.input(2));
  KILN_CHECK(A.dtype() == B.dtype() && (!C || C->dtype() == A.dtype()), c.node().describe(),
             ": A, B and C must share a dtype");
  const Tensor* cp = C ? &*C : nullptr;
  switch (A.dtype()) {
    case DType::f32: return nn::set_result(c, 0, gemm<float>(c, A, B, cp), dt);
    case DType::f64: return c.set_output(0, gemm<double>(c, A, B, cp));
    case DType::i32: return c.set_output(0, gemm<int32_t>(c, A, B, cp));
    case DType::i64: return c.set_output(0, gemm<int64_t>(c, A, B, cp));
    case DType::u32: return c.set_output(0, gemm<uint32_t>(c, A, B, cp));
    case DType::u64: return c.set_output(0, gemm<uint64_t>(c, A, B, cp));
    default: c.fail(str_cat("unsupported dtype ", dtype_name(A.dtype())));
  }
}

}  // namespace

OpDef def_Gemm() {
  return {.name = "Gemm",
          .since = 1,
          .min_inputs = 2,
          .max_inputs = 3,
          .attrs = {{"alpha", AttrKind::Float},
                    {"beta", AttrKind::Float},
                    {"transA", AttrKind::Int},
                    {"transB", AttrKind::Int},
                    {"broadcast", AttrKind::Int}},
          .infer = infer_gemm,
          .cost = cost_gemm,
          .kernel = gemm_kernel,
          .doc = "alpha * op(A) * op(B) + beta * C, C broadcast to [M, N]"};
}

}  // namespace kiln::ops
