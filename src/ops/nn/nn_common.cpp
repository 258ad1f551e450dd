#include "nn_common.h"

#include <algorithm>
#include <type_traits>

#include "kiln/kernels/gemm.h"

namespace kiln::ops::nn {

template <typename T>
void matmul(bool transA, bool transB, int64_t M, int64_t N, int64_t K, const T* A, const T* B, T* C,
            bool accumulate, int threads) {
  if constexpr (std::is_same_v<T, float>) {
    kernels::sgemm(transA, transB, M, N, K, 1.f, A, transA ? M : K, B, transB ? K : N, accumulate ? 1.f : 0.f, C, N,
                   threads);
  } else {
    for (int64_t i = 0; i < M; ++i) {
      T* c = C + i * N;
      if (!accumulate) std::fill(c, c + N, T(0));
      for (int64_t p = 0; p < K; ++p) {
        T a = transA ? A[p * M + i] : A[i * K + p];
        for (int64_t j = 0; j < N; ++j) c[j] += a * (transB ? B[j * K + p] : B[p * N + j]);
      }
    }
  }
}

template void matmul<float>(bool, bool, int64_t, int64_t, int64_t, const float*, const float*, float*, bool, int);
template void matmul<double>(bool, bool, int64_t, int64_t, int64_t, const double*, const double*, double*, bool, int);
template void matmul<int32_t>(bool, bool, int64_t, int64_t, int64_t, const int32_t*, const int32_t*, int32_t*, bool, int);
template void matmul<int64_t>(bool, bool, int64_t, int64_t, int64_t, const int64_t*, const int64_t*, int64_t*, bool, int);
template void matmul<uint32_t>(bool, bool, int64_t, int64_t, int64_t, const uint32_t*, const uint32_t*, uint32_t*, bool, int);
template void matmul<uint64_t>(bool, bool, int64_t, int64_t, int64_t, const uint64_t*, const uint64_t*, uint64_t*, bool, int);

}  // namespace kiln::ops::nn
