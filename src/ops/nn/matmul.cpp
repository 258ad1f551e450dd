// MatMul with numpy semantics: 1-D operands are promoted (A: [K] -> [1,K], B: [K] -> [K,1])
// and the promoted dim dropped again; leading batch dims broadcast.
#include "nn_common.h"

namespace kiln::ops {
namespace {

void infer_matmul(InferContext& c) {
  const Shape& a = c.in_shape(0);
  const Shape& b = c.in_shape(1);
  if (!a.rank_known || !b.rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
  if (a.rank() == 0 || b.rank() == 0) c.fail("MatMul operands must have rank >= 1");
  const Dim& ka = a[a.rank() - 1];
  const Dim& kb = b.rank() == 1 ? b[0] : b[b.rank() - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value)
    c.fail(str_cat("inner dims differ: A ", a.str(), " and B ", b.str()));
  Shape ba(std::vector<Dim>(a.dims.begin(), a.dims.end() - std::min<size_t>(2, a.rank())));
  Shape bb(std::vector<Dim>(b.dims.begin(), b.dims.end() - std::min<size_t>(2, b.rank())));
  auto batch = broadcast_shapes(ba, bb);
  if (!batch) c.fail(str_cat("batch dims of A ", a.str(), " and B ", b.str(), " do not broadcast"));
  std::vector<Dim> out = batch->dims;
  if (a.rank() >= 2) out.push_back(a[a.rank() - 2]);
  if (b.rank() >= 2) out.push_back(b[b.rank() - 1]);
  c.set_output(0, c.in_dtype(0), Shape(out));
}

Cost cost_matmul(const CostContext& c) {
  const auto& a = c.in_dims[0];
  Cost k;
  // Every output element is a K-long dot product.
  k.flops = 2.0 * static_cast<double>(numel_of(c.out_dims[0])) * static_cast<double>(a.back());
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

template <typename T>
Tensor matmul(const KernelContext& c, const Tensor& A, const Tensor& B) {
  const Node& n = c.node();
  KILN_CHECK(A.rank() >= 1 && B.rank() >= 1, n.describe(), ": operands must have rank >= 1");
  std::vector<int64_t> ad = A.dims(), bd = B.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  int64_t M = ad[ad.size() - 2], K = ad.back(), N = bd.back();
  KILN_CHECK(bd[bd.size() - 2] == K, n.describe(), ": inner dims differ: A ", dims_str(A.dims()), " and B ",
             dims_str(B.dims()));
  std::vector<int64_t> ba(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  std::vector<int64_t> batch = broadcast_dims(ba, bb, n);
  std::vector<int64_t> out = batch;
  if (A.rank() >= 2) out.push_back(M);
  if (B.rank() >= 2) out.push_back(N);
  Tensor Y(A.dtype(), out);
  const T* a = A.data<T>();
  const T* b = B.data<T>();
  T* y = Y.data<T>();
  int64_t nbatch = numel_of(batch);
  if (numel_of(bb) == 1) {
    // B is shared by every batch: fold A's batch into M for one large product.
    nn::matmul<T>(false, false, nbatch * M, N, K, a, b, y, false, c.threads());
    return Y;
  }
  // General case: walk the broadcast batch index, mapping it into A's and B's batch.
  size_t r = batch.size();
  ba.insert(ba.begin(), r - ba.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  std::vector<int64_t> sa = strides_of(ba), sb = strides_of(bb), idx(r, 0);
  for (int64_t i = 0; i < nbatch; ++i) {
    int64_t oa = 0, ob = 0;
    for (size_t d = 0; d < r; ++d) {
      if (ba[d] != 1) oa += idx[d] * sa[d];
      if (bb[d] != 1) ob += idx[d] * sb[d];
    }
    nn::matmul<T>(false, false, M, N, K, a + oa * M * K, b + ob * K * N, y + i * M * N, false, c.threads());
    for (int64_t d = static_cast<int64_t>(r) - 1; d >= 0; --d) {
      if (++idx[d] < batch[d]) break;
      idx[d] = 0;
    }
  }
  return Y;
}

void matmul_kernel(KernelContext& c) {
  DType dt = c.input(0).dtype();
  Tensor A = nn::compute_input(c.input(0)), B = nn::compute_input(c.input(1));
  KILN_CHECK(A.dtype() == B.dtype(), c.node().describe(), ": A and B must share a dtype");
  switch (A.dtype()) {
    case DType::f32: return nn::set_result(c, 0, matmul<float>(c, A, B), dt);
    case DType::f64: return c.set_output(0, matmul<double>(c, A, B));
    case DType::i32: return c.set_output(0, matmul<int32_t>(c, A, B));
    case DType::i64: return c.set_output(0, matmul<int64_t>(c, A, B));
    case DType::u32: return c.set_output(0, matmul<uint32_t>(c, A, B));
    case DType::u64: return c.set_output(0, matmul<uint64_t>(c, A, B));
    default: c.fail(str_cat("unsupported dtype ", dtype_name(A.dtype())));
  }
}

}  // namespace

OpDef def_MatMul() {
  return {.name = "MatMul",
          .since = 1,
          .min_inputs = 2,
          .max_inputs = 2,
          .infer = infer_matmul,
          .cost = cost_matmul,
          .kernel = matmul_kernel,
          .doc = "numpy matmul: batched, broadcasting, 1-D operands promoted"};
}

}  // namespace kiln::ops
