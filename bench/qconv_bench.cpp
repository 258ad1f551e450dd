// INT8 convolution throughput on resnet50's layer shapes (GOP/s: 2 ops per multiply-add), batch 1,
// u8 activations x s8 weights requantized to u8 with a ReLU, through the kernel table `kiln
// compile` would pick for the weights (qkernels_for_signed): on AVX2 without VNNI, 7-bit weights
// (`kiln quantize --reduce-range`, the "Narrow" rows) take the vpmaddubsw kernels and full-range
// weights the widening ones.
// mobilenet_v2's layers ("Mobilenet" rows, 7-bit weights): the 1x1 expansions and projections
// and the depthwise 3x3s (group == C == K, the channel-blocked kernel where the table has it).
//   build/bench/qconv_bench --benchmark_min_time=1
//   build/bench/qconv_bench --benchmark_filter=Narrow
//   build/bench/qconv_bench --benchmark_filter=Mobilenet
//   build/bench/qconv_bench --benchmark_filter='Full/.*/1/0/[01]/'   (one thread, NCHW vs NHWC)
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "kiln/kernels/int8.h"

namespace {

using namespace kiln::kernels;
using namespace kiln::kernels::int8;

// args: C, H, K, R, stride, threads, depthwise (square input and kernel, pad R/2; depthwise 1:
// group == C == K); `limit`: |weights| bound.
void run(benchmark::State& st, int limit) {
  Conv2dShape s;
  s.C = st.range(0), s.H = s.W = st.range(1), s.K = st.range(2), s.R = s.S = st.range(3);
  s.stride_h = s.stride_w = st.range(4);
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = s.R / 2;
  const int threads = static_cast<int>(st.range(5));
  if (st.range(6) != 0) s.group = s.K = s.C;
  // args[7] (resnet50 rows): 1 = pixel-major input and output (Conv2dShape::x_nhwc / y_nhwc).
  if (st.range(7) != 0) s.x_nhwc = s.y_nhwc = true;
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> ux(0, 255), uw(-limit, limit);
  std::vector<uint8_t> x(s.C * s.H * s.W);
  std::vector<int8_t> w(s.K * (s.C / s.group) * s.R * s.S);
  for (auto& v : x) v = static_cast<uint8_t>(ux(rng));
  for (auto& v : w) v = static_cast<int8_t>(uw(rng));
  const QKernels& k = qkernels_for_signed(w.data(), static_cast<int64_t>(w.size()));
  if ((s.x_nhwc || s.y_nhwc) && !qconv_nhwc_supported(k, s)) {
    st.SkipWithError("no pixel-major path for this shape on this CPU");
    return;
  }
  std::vector<uint8_t> packed(qconv_packed_weight_bytes(k, s)), ws(qconv_workspace_bytes(k, s, threads));
  qconv_pack_weight(k, s, w.data(), packed.data());
  std::vector<int32_t> bias(s.K, -1000);
  std::vector<float> scale(s.K, 1e-4f);
  QEpilogue e;
  e.bias = bias.data(), e.scale = scale.data(), e.lo = 0.f, e.out = QType::U8, e.out_inv_scale = 20.f;
  std::vector<uint8_t> y(s.K * s.out_h() * s.out_w());
  double best = 1e30;
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    qconv2d(k, s, x.data(), 0, 0, packed.data(), e, y.data(), ws.data(), threads);
    benchmark::ClobberMemory();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double ops = 2.0 * s.K * s.out_h() * s.out_w() * (s.C / s.group) * s.R * s.S;
  st.counters["GOPs"] = benchmark::Counter(ops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["best_GOPs"] = ops * 1e-9 / best;
  st.SetLabel(qisa_name(k.isa) + std::string(k.narrow_signed ? " narrow" : "") + " " +
              qconv_tactic_name(k, s, false));
}

void BM_QConvNarrow(benchmark::State& st) { run(st, 63); }
void BM_QConvFull(benchmark::State& st) { run(st, 127); }

void resnet50(benchmark::internal::Benchmark* b) {
  const int64_t layers[][5] = {
      {3, 224, 64, 7, 2},     {64, 56, 64, 1, 1},    {64, 56, 64, 3, 1},     {64, 56, 256, 1, 1},
      {256, 56, 64, 1, 1},    {256, 56, 128, 1, 1},  {128, 56, 128, 3, 2},   {128, 28, 512, 1, 1},
      {512, 28, 128, 1, 1},   {128, 28, 128, 3, 1},  {256, 14, 256, 3, 1},   {256, 14, 1024, 1, 1},
      {1024, 14, 256, 1, 1},  {512, 7, 512, 3, 1},   {512, 7, 2048, 1, 1},   {2048, 7, 512, 1, 1},
      {256, 56, 512, 1, 2},   {1024, 14, 2048, 1, 2}, {256, 28, 256, 3, 2},   {512, 14, 512, 3, 2},
      {512, 28, 1024, 1, 2},
  };
  for (int64_t th : {1, 2})
    for (const auto& l : layers)
      for (int64_t nhwc : {0, 1}) b->Args({l[0], l[1], l[2], l[3], l[4], th, 0, nhwc});
}

// {C, H, K, R, stride, depthwise}: each distinct layer once.
void mobilenet_v2(benchmark::internal::Benchmark* b) {
  const int64_t layers[][6] = {
      {32, 112, 32, 3, 1, 1},  {32, 112, 16, 1, 1, 0},  {16, 112, 96, 1, 1, 0},  {96, 112, 96, 3, 2, 1},
      {96, 56, 24, 1, 1, 0},   {24, 56, 144, 1, 1, 0},  {144, 56, 144, 3, 1, 1}, {144, 56, 144, 3, 2, 1},
      {144, 28, 32, 1, 1, 0},  {32, 28, 192, 1, 1, 0},  {192, 28, 192, 3, 1, 1}, {192, 28, 192, 3, 2, 1},
      {384, 14, 384, 3, 1, 1}, {64, 14, 384, 1, 1, 0},  {384, 14, 64, 1, 1, 0},  {576, 14, 576, 3, 1, 1},
      {576, 14, 576, 3, 2, 1}, {960, 7, 960, 3, 1, 1},  {160, 7, 960, 1, 1, 0},  {960, 7, 160, 1, 1, 0},
      {320, 7, 1280, 1, 1, 0},
  };
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], l[3], l[4], th, l[5], 0});
}

BENCHMARK(BM_QConvNarrow)->Name("Narrow")->Apply(resnet50)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QConvNarrow)->Name("Mobilenet")->Apply(mobilenet_v2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_QConvFull)->Name("Full")->Apply(resnet50)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
