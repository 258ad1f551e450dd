// Convolution throughput on resnet50's layer shapes (GFLOP/s, % of the one-core FMA peak
// `kiln machine` cached, else 225 GFLOP/s) and mobilenet_v2's depthwise layers (GB/s of input + output moved), batch 1, through
// the tactic the lowering picks (conv_preferred_tactic), or one named by KILN_CONV_TACTIC
// (gemm, pointwise, pixel-gemm, direct) where it applies.
//   build/bench/conv_bench --benchmark_min_time=1
//   KILN_CONV_TACTIC=direct build/bench/conv_bench --benchmark_filter=Resnet50
//   KILN_CONV_BLOCKED=1 ...: direct layers on channel-blocked input and output
//   KILN_CONV_ISA=avx2 ...: the AVX2 table's kernels (BM_Conv only), e.g. on an AVX-512 host
//   --benchmark_filter=ExpandOut8vs16: mobilenet_v2's expands into 8- against 16-channel blocks, paired
//   --benchmark_filter=Dw16vs8: its small depthwise layers on 16- against 8-channel blocks, paired
//   --benchmark_filter=ExpandDepthwise: its expand + depthwise pairs band by band against apart, paired
//   --benchmark_filter=DepthwiseHalves: depthwise layers on 256-bit halves against 16-lane pairs, paired
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <random>
#include <vector>

#include "kiln/kernels/conv.h"
#include "kiln/kernels/depthwise_project.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/pool.h"
#include "kiln/kernels/stem_depthwise_project.h"
#include "kernels/conv_stem.h"
#include "kernels/depthwise_halves.h"
#include "kernels/depthwise_parts.h"
#include "kernels/depthwise_wide.h"
#include "isa_table.h"
#include "runtime_memory.h"

namespace {

using namespace kiln::kernels;

using kiln::bench::Floats;

// args: C, H, K, R, stride, group, threads, N (square input and kernel, pad R/2; N images)
void BM_Conv(benchmark::State& st) {
  Conv2dShape s;
  s.C = st.range(0), s.H = s.W = st.range(1), s.K = st.range(2), s.R = s.S = st.range(3);
  s.stride_h = s.stride_w = st.range(4);
  s.group = st.range(5);
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = s.R / 2;
  const int threads = static_cast<int>(st.range(6));
  s.N = st.range(7);
  ConvTactic tactic = conv_preferred_tactic(s);
  if (const char* forced = std::getenv("KILN_CONV_TACTIC"))
    for (ConvTactic t : {ConvTactic::Gemm, ConvTactic::Pointwise, ConvTactic::PixelGemm, ConvTactic::Direct})
      if (conv_tactic_name(t) == std::string(forced) && conv_tactic_unsupported(t, s).empty()) tactic = t;
  // KILN_CONV_BLOCKED=1: a direct or depthwise layer reads and writes channel-blocked
  // activations, as between two such layers in a model (lower/blocked_layout.cpp).
  // A direct layer whose input channels are not a multiple of 8 (a stem on RGB), or a depthwise
  // one of one input channel (digits_cnn's first), reads the plain input and writes blocked
  // output, as in a model.
  if (const char* b = std::getenv("KILN_CONV_BLOCKED");
      b && std::string(b) == "1" && (tactic == ConvTactic::Direct || tactic == ConvTactic::Depthwise) &&
      s.K % kConvBlock == 0) {
    if (s.C % kConvBlock == 0) s.x_blocked = s.y_blocked = true;
    else if (tactic == ConvTactic::Direct || s.C == 1) s.y_blocked = true;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  // Every buffer aligned as in the runtime (runtime_memory.h): the pointwise tactic reads rows
  // in place only when they are line-aligned (gemm_driver.cpp).
  Floats x(s.N * s.C * s.H * s.W);
  std::vector<float> w(s.K * (s.C / s.group) * s.R * s.S), bias(s.K);
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  // KILN_CONV_ISA=avx2 (or scalar, avx512): that ISA's table instead of this CPU's best, e.g. the
  // AVX2 kernels measured on an AVX-512 host.
  const KernelTable* table = &kernel_table();
  if (const char* isa = std::getenv("KILN_CONV_ISA")) {
    table = kiln::bench::table_named(isa);
    if (!table) {
      st.SkipWithError("KILN_CONV_ISA names no ISA this CPU runs (scalar, avx2, avx512)");
      return;
    }
  }
  const KernelTable& tab = *table;
  Floats packed(conv_packed_weight_floats_on(tab, tactic, s)), ws(conv_workspace_floats_on(tab, tactic, s, threads));
  conv_pack_weight_on(tab, tactic, s, w.data(), packed.data());
  const int64_t OH = s.out_h(), OW = s.out_w();
  Floats y(s.N * s.K * OH * OW);
  Epilogue e;
  e.bias = bias.data(), e.bias_per_row = true, e.act = Act::Relu;
  // KILN_CONV_ACT=none|clip|silu: the fused activation (default Relu), e.g. efficientnet_b0's SiLU.
  if (const char* a = std::getenv("KILN_CONV_ACT")) {
    const std::string act = a;
    if (act == "none") e.act = Act::None;
    if (act == "clip") e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
    if (act == "silu") e.act = Act::Silu;
  }
  double best = 1e30;
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    conv2d_on(tab, tactic, s, x.data(), packed.data(), y.data(), e, ws.data(), threads);
    benchmark::ClobberMemory();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  const double flops = 2.0 * s.N * s.K * OH * OW * (s.C / s.group) * s.R * s.S;
  st.counters["GFLOPs"] = benchmark::Counter(flops * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  st.counters["best_GFLOPs"] = flops * 1e-9 / best;
  st.counters["best_peak%"] = flops / kiln::bench::cached_peak(threads) * 100 / best;
  if (tactic == ConvTactic::Depthwise) st.counters["best_GBps"] = 4.0 * (x.size() + y.size()) * 1e-9 / best;
  st.SetLabel(std::string(conv_tactic_name(tactic)) + (s.y_blocked ? " blocked" : "") + " " + isa_name(tab.isa));
}

void resnet50(benchmark::internal::Benchmark* b) {
  const int64_t layers[][6] = {
      {3, 224, 64, 7, 2, 1},                                                // stem
      {64, 56, 64, 1, 1, 1},    {64, 56, 64, 3, 1, 1},    {64, 56, 256, 1, 1, 1},  {256, 56, 64, 1, 1, 1},
      {256, 56, 128, 1, 1, 1},  {128, 56, 128, 3, 2, 1},  {128, 28, 512, 1, 1, 1}, {512, 28, 128, 1, 1, 1},
      {128, 28, 128, 3, 1, 1},  {256, 28, 256, 3, 2, 1},  {256, 14, 256, 3, 1, 1}, {256, 14, 1024, 1, 1, 1},
      {1024, 14, 256, 1, 1, 1}, {512, 14, 512, 3, 2, 1},  {512, 7, 512, 3, 1, 1},  {512, 7, 2048, 1, 1, 1},
      {2048, 7, 512, 1, 1, 1},
      // the downsample branches (1x1 stride 2) and resnet18's own shapes
      {256, 56, 512, 1, 2, 1},  {512, 28, 1024, 1, 2, 1}, {1024, 14, 2048, 1, 2, 1}, {64, 56, 128, 3, 2, 1},
      {128, 28, 256, 3, 2, 1},  {256, 14, 512, 3, 2, 1},  {64, 56, 128, 1, 2, 1},    {128, 28, 256, 1, 2, 1},
      {256, 14, 512, 1, 2, 1},
  };
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], l[3], l[4], l[5], th, 1});
}

void mobilenet_v2_depthwise(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{32, 112, 1},  {96, 112, 2}, {144, 56, 1}, {144, 56, 2}, {192, 28, 1},
                               {192, 28, 2},  {384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[0], 3, l[2], l[0], th, 1});
}

// efficientnet_b0's depthwise layers (3x3 and 5x5, SiLU in the model; Relu here as for the rest).
void efficientnet_b0_depthwise(benchmark::internal::Benchmark* b) {
  const int64_t layers[][4] = {{32, 112, 3, 1}, {96, 112, 3, 2}, {144, 56, 3, 1}, {144, 56, 5, 2},
                               {240, 28, 5, 1}, {240, 28, 3, 2}, {480, 14, 3, 1}, {480, 14, 5, 1},
                               {672, 14, 5, 1}, {672, 14, 5, 2}, {1152, 7, 5, 1}, {1152, 7, 3, 1}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[0], l[2], l[3], l[0], th, 1});
}

// mobilenet_v2's 1x1 expand/project layers at 112x112..7x7 (pointwise and pixel-gemm): the
// large planes write many output channels of long rows; the small ones are a few MFLOP each,
// where splitting over threads must pay for itself.
void mobilenet_v2_pointwise(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{32, 112, 16}, {16, 112, 96}, {24, 56, 144}, {144, 56, 24}, {32, 28, 192}, {192, 28, 32}, {64, 14, 384}, {384, 14, 64},
                               {96, 14, 576}, {576, 14, 96}, {160, 7, 960}, {960, 7, 160}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], 1, 1, 1, th, 1});
}

// efficientnet_b0's 1x1 expand/project layers (SiLU or none in the model; Relu here), 112x112..7x7.
void efficientnet_b0_pointwise(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{32, 112, 16},  {16, 112, 96},  {96, 56, 24},   {24, 56, 144},   {144, 56, 24},
                               {144, 28, 40},  {40, 28, 240},  {240, 28, 40},  {240, 14, 80},   {80, 14, 480},
                               {480, 14, 80},  {480, 14, 112}, {112, 14, 672}, {672, 14, 112},  {672, 7, 192},
                               {192, 7, 1152}, {1152, 7, 192}, {1152, 7, 320}, {320, 7, 1280}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], 1, 1, 1, th, 1});
}

// digits_cnn's two 3x3 convolutions over its 360 8x8 test images (1 -> 16, 16 -> 32).
void digits(benchmark::internal::Benchmark* b) {
  for (int64_t th : {1, 2}) {
    b->Args({1, 8, 16, 3, 1, 1, th, 360});
    b->Args({16, 8, 32, 3, 1, 1, th, 360});
  }
}

// The stems: resnet's 7x7/2 and mobilenet/efficientnet's 3x3/2 on the 3-channel image.
void stems(benchmark::internal::Benchmark* b) {
  for (int64_t th : {1, 2}) {
    b->Args({3, 224, 64, 7, 2, 1, th, 1});
    b->Args({3, 224, 32, 3, 2, 1, th, 1});
  }
}

// args: C, H, window, stride, pad, threads: max pooling (resnet's 3x3/2 after the stem), GB/s
// of input + output moved.
void BM_MaxPool(benchmark::State& st) {
  Conv2dShape s;
  s.C = s.K = s.group = st.range(0), s.H = s.W = st.range(1), s.R = s.S = st.range(2);
  s.stride_h = s.stride_w = st.range(3);
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = st.range(4);
  const int threads = static_cast<int>(st.range(5));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(s.C * s.H * s.W), y(s.C * s.out_h() * s.out_w());
  for (auto& v : x) v = u(rng);
  Floats ws(pool2d_workspace_floats(s, threads));
  double best = 1e30;
  for (auto _ : st) {
    auto t0 = std::chrono::steady_clock::now();
    pool2d(PoolKind::Max, s, false, x.data(), y.data(), ws.data(), threads);
    benchmark::ClobberMemory();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  st.counters["best_GBps"] = 4.0 * (x.size() + y.size()) * 1e-9 / best;
}

// Runs run8 and run16 call by call, the order flipped each iteration, and reports their median
// times (as us8, us16, or the names given) and the median of the per-call ratios as `ratio_name`:
// the 16-channel time over the 8-channel one (sixteen_over_eight), or the other way round.
template <class Run8, class Run16>
void paired_blocks(benchmark::State& st, Run8 run8, Run16 run16, const char* ratio_name, bool sixteen_over_eight,
                   const char* name8 = "us8", const char* name16 = "us16") {
  auto timed = [](auto& run) {
    auto t0 = std::chrono::steady_clock::now();
    run();
    benchmark::ClobberMemory();
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  };
  std::vector<double> t8, t16, ratio;
  bool flip = false;
  for (auto _ : st) {
    double a, b;
    if (flip) a = timed(run8), b = timed(run16);
    else b = timed(run16), a = timed(run8);
    flip = !flip;
    t8.push_back(a), t16.push_back(b), ratio.push_back(sixteen_over_eight ? b / a : a / b);
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.empty() ? 0.0 : v[v.size() / 2];
  };
  st.counters[name8] = median(t8);
  st.counters[name16] = median(t16);
  st.counters[ratio_name] = median(ratio);
}

// args: C, H, K, threads: a 1x1 expand between channel-blocked activations as mobilenet_v2 runs
// it (input in 16-channel blocks, bias and Clip(0, 6) fused), writing its output in 16-channel
// blocks (a pixel's block one vector) against 8-channel blocks, which is what the model gets
// today because the depthwise layer after it reads only 8 (lower/blocked_layout.cpp). The two
// run call by call in the same iteration, order flipped each time; `out8_vs_out16` is the
// median of the per-call time ratios (> 1: the 8-channel output is slower), us8 and us16 the
// medians: what the 16-channel depthwise kernel (below) gains the expands before it.
void BM_ExpandOutputBlocks(benchmark::State& st) {
  Conv2dShape s;
  s.C = st.range(0), s.H = s.W = st.range(1), s.K = st.range(2);
  const int threads = static_cast<int>(st.range(3));
  s.x_blocked = s.y_blocked = true;
  s.x_block = kConvBlockWide;
  Conv2dShape s8 = s, s16 = s;
  s8.y_block = kConvBlock, s16.y_block = kConvBlockWide;
  for (const Conv2dShape* c : {&s8, &s16})
    if (const std::string why = conv_tactic_unsupported(ConvTactic::Direct, *c); !why.empty()) {
      st.SkipWithError(why.c_str());
      return;
    }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(s.C * s.H * s.W), y(s.K * s.H * s.W);
  std::vector<float> w(s.K * s.C), bias(s.K);
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  for (auto& v : bias) v = 0.1f * u(rng);
  Floats p8(conv_packed_weight_floats(ConvTactic::Direct, s8)), p16(conv_packed_weight_floats(ConvTactic::Direct, s16));
  conv_pack_weight(ConvTactic::Direct, s8, w.data(), p8.data());
  conv_pack_weight(ConvTactic::Direct, s16, w.data(), p16.data());
  Floats ws(std::max(conv_workspace_floats(ConvTactic::Direct, s8, threads),
                     conv_workspace_floats(ConvTactic::Direct, s16, threads)) + 1);
  Epilogue e;
  e.bias = bias.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
  paired_blocks(
      st, [&] { conv2d(ConvTactic::Direct, s8, x.data(), p8.data(), y.data(), e, ws.data(), threads); },
      [&] { conv2d(ConvTactic::Direct, s16, x.data(), p16.data(), y.data(), e, ws.data(), threads); }, "out8_vs_out16",
      false);
}

// args: C, H, stride, threads: a 3x3 depthwise layer (Clip(0, 6), bias) on 16-channel blocks
// in and out (src/kernels/depthwise_wide.h) against 8-channel blocks, call by call as above;
// `out16_vs_out8` is the median of the per-call ratios (< 1: the 16-channel kernel is faster).
// Planes the 16-channel kernel does not take (input rows over 16 pixels) report an error.
void BM_DepthwiseBlocks(benchmark::State& st) {
  Conv2dShape s;
  s.C = s.K = s.group = st.range(0), s.H = s.W = st.range(1), s.R = s.S = 3;
  s.stride_h = s.stride_w = st.range(2);
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  const int threads = static_cast<int>(st.range(3));
  s.x_blocked = s.y_blocked = true;
  Conv2dShape s16 = s;
  s16.x_block = s16.y_block = kConvBlockWide;
  if (const std::string why = conv_tactic_unsupported(ConvTactic::Depthwise, s16); !why.empty()) {
    st.SkipWithError(why.c_str());
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(s.C * s.H * s.W), y(s.K * s.out_h() * s.out_w());
  std::vector<float> w(s.K * 9), bias(s.K);
  for (auto& v : x) v = u(rng);
  for (auto& v : w) v = u(rng);
  for (auto& v : bias) v = 0.1f * u(rng);
  Floats packed(conv_packed_weight_floats(ConvTactic::Depthwise, s));
  conv_pack_weight(ConvTactic::Depthwise, s, w.data(), packed.data());
  Epilogue e;
  e.bias = bias.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
  paired_blocks(
      st, [&] { conv2d(ConvTactic::Depthwise, s, x.data(), packed.data(), y.data(), e, nullptr, threads); },
      [&] { conv2d(ConvTactic::Depthwise, s16, x.data(), packed.data(), y.data(), e, nullptr, threads); },
      "out16_vs_out8", true);
}

void mobilenet_v2_small_depthwise(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{384, 14, 1}, {576, 14, 1}, {576, 14, 2}, {960, 7, 1}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], th});
}

// mobilenet_v2's expands whose input channels fill 16-channel blocks (24 -> 144 does not).
// args: C, H, E, stride, threads: an expand 1x1 (C -> E, 8-channel blocks in and out, bias and
// Clip(0, 6)) and the 3x3 depthwise layer after it (the same epilogue), as kiln.ExpandDepthwise
// runs them (kernels::expand_depthwise): band by band against the two convolutions one after the
// other over the workspace (KILN_EXPAND_BANDS's two pinned modes), call by call, the order
// flipped each time; `bands_vs_apart` is the median of the per-call ratios (< 1: the bands are
// faster), us_apart and us_bands the median times.
void BM_ExpandDepthwise(benchmark::State& st) {
  Conv2dShape e, d;
  e.C = st.range(0), e.H = e.W = st.range(1), e.K = st.range(2);
  e.x_blocked = e.y_blocked = true;
  d.C = d.K = d.group = e.K, d.H = d.W = e.H, d.R = d.S = 3, d.stride_h = d.stride_w = st.range(3);
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  d.x_blocked = d.y_blocked = true;
  const int threads = static_cast<int>(st.range(4));
  if (const std::string why = expand_depthwise_unsupported(e, d); !why.empty()) {
    st.SkipWithError(why.c_str());
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(e.C * e.H * e.W), y(d.K * d.out_h() * d.out_w());
  std::vector<float> w1(e.K * e.C), w2(d.K * 9), b1(e.K), b2(d.K);
  for (auto* v : {&w1, &w2, &b1, &b2})
    for (auto& f : *v) f = u(rng);
  for (auto& f : x) f = u(rng);
  Floats p1(conv_packed_weight_floats(ConvTactic::Direct, e)), p2(conv_packed_weight_floats(ConvTactic::Depthwise, d));
  conv_pack_weight(ConvTactic::Direct, e, w1.data(), p1.data());
  conv_pack_weight(ConvTactic::Depthwise, d, w2.data(), p2.data());
  Floats ws(expand_depthwise_workspace_floats(e, d, threads));
  Epilogue e1, e2;
  e1.bias = b1.data(), e1.bias_per_row = true, e1.act = Act::Clip, e1.act_alpha = 0.f, e1.act_beta = 6.f;
  e2 = e1, e2.bias = b2.data();
  auto run = [&](ExpandBands mode) {
    set_expand_bands(mode);
    expand_depthwise(e, d, x.data(), p1.data(), e1, p2.data(), e2, y.data(), ws.data(), threads);
  };
  paired_blocks(
      st, [&] { run(ExpandBands::Off); }, [&] { run(ExpandBands::On); }, "bands_vs_apart", true, "us_apart",
      "us_bands");
  set_expand_bands(ExpandBands::Auto);
}

void mobilenet_v2_expand_depthwise(benchmark::internal::Benchmark* b) {
  const int64_t pairs[][4] = {{16, 112, 96, 2}, {24, 56, 144, 2}, {32, 28, 192, 2}, {96, 14, 576, 2}, {24, 56, 144, 1}};
  for (int64_t th : {1, 2})
    for (const auto& p : pairs) b->Args({p[0], p[1], p[2], p[3], th});
}

// args: C, H, K (the projection's), residual, threads: mobilenet_v2's depthwise 3x3 (stride 1,
// Clip 0..6) and the 1x1 projection after it (no activation; with the block's residual when
// `residual`), run as the two calls against band by band (depthwise_project), call by call.
void BM_DepthwiseProject(benchmark::State& st) {
  Conv2dShape d, p;
  d.C = d.K = d.group = st.range(0), d.H = d.W = st.range(1), d.R = d.S = 3;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  d.x_blocked = d.y_blocked = true;
  p.C = d.K, p.H = p.W = d.H, p.K = st.range(2);
  p.x_blocked = p.y_blocked = true;
  const bool residual = st.range(3) != 0;
  const int threads = static_cast<int>(st.range(4));
  if (const std::string why = depthwise_project_unsupported(d, p); !why.empty()) {
    st.SkipWithError(why.c_str());
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(d.C * d.H * d.W), y(p.K * p.H * p.W), z(p.K * p.H * p.W), mid(d.K * d.H * d.W);
  std::vector<float> wd(d.K * 9), wp(p.K * p.C), bd(d.K), bp(p.K);
  for (auto* v : {&wd, &wp, &bd, &bp})
    for (auto& f : *v) f = u(rng);
  for (auto& f : x) f = u(rng);
  for (auto& f : z) f = u(rng);
  Floats pd(conv_packed_weight_floats(ConvTactic::Depthwise, d)), pp(conv_packed_weight_floats(ConvTactic::Direct, p));
  conv_pack_weight(ConvTactic::Depthwise, d, wd.data(), pd.data());
  conv_pack_weight(ConvTactic::Direct, p, wp.data(), pp.data());
  Floats ws(std::max(conv_workspace_floats(ConvTactic::Depthwise, d, threads),
                     conv_workspace_floats(ConvTactic::Direct, p, threads)) + 16);
  Epilogue e1, e2;
  e1.bias = bd.data(), e1.bias_per_row = true, e1.act = Act::Clip, e1.act_alpha = 0.f, e1.act_beta = 6.f;
  e2.bias = bp.data(), e2.bias_per_row = true;
  if (residual) e2.residual = z.data(), e2.ldr = p.H * p.W;
  paired_blocks(
      st,
      [&] {
        conv2d(ConvTactic::Depthwise, d, x.data(), pd.data(), mid.data(), e1, ws.data(), threads);
        conv2d(ConvTactic::Direct, p, mid.data(), pp.data(), y.data(), e2, ws.data(), threads);
      },
      [&] { depthwise_project(d, p, x.data(), pd.data(), e1, pp.data(), e2, y.data(), nullptr, threads); },
      "bands_vs_apart", true, "us_apart", "us_bands");
}

void mobilenet_v2_depthwise_project(benchmark::internal::Benchmark* b) {
  const int64_t pairs[][4] = {{32, 112, 16, 0}, {144, 56, 24, 1}, {192, 28, 32, 1}, {384, 14, 64, 1}, {576, 14, 96, 1}, {960, 7, 160, 1}};
  for (int64_t th : {1, 2})
    for (const auto& q : pairs) b->Args({q[0], q[1], q[2], q[3], th});
}

// args: threads: mobilenet_v2's stem (3 -> 32, 3x3 stride 2 on 224x224, Clip 0..6), depthwise 3x3
// (Clip 0..6) and 1x1 projection to 16 channels, as kiln.StemDepthwiseProject runs them
// (kernels::stem_depthwise_project): band by band against the stem and then the pair (its own
// choice of bands or two calls), call by call, the order flipped each time.
void BM_StemDepthwiseProject(benchmark::State& st) {
  Conv2dShape s, d, p;
  s.C = 3, s.H = s.W = 224, s.K = 32, s.R = s.S = 3, s.stride_h = s.stride_w = 2;
  s.pad_top = s.pad_left = s.pad_bottom = s.pad_right = 1;
  s.y_blocked = true;
  d.C = d.K = d.group = 32, d.H = d.W = 112, d.R = d.S = 3;
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = 1;
  d.x_blocked = d.y_blocked = true;
  p.C = 32, p.H = p.W = 112, p.K = 16;
  p.x_blocked = p.y_blocked = true;
  const int threads = static_cast<int>(st.range(0));
  if (const std::string why = stem_depthwise_project_unsupported(s, Act::Clip, d, p); !why.empty()) {
    st.SkipWithError(why.c_str());
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(s.C * s.H * s.W), y(p.K * p.H * p.W);
  std::vector<float> ws(s.K * s.C * 9), wd(d.K * 9), wp(p.K * p.C), bs(s.K), bd(d.K), bp(p.K);
  for (auto* v : {&ws, &wd, &wp, &bs, &bd, &bp})
    for (auto& f : *v) f = u(rng);
  for (auto& f : x) f = u(rng);
  Floats ps(conv_packed_weight_floats(ConvTactic::Direct, s)), pd(conv_packed_weight_floats(ConvTactic::Depthwise, d)),
      pp(conv_packed_weight_floats(ConvTactic::Direct, p));
  conv_pack_weight(ConvTactic::Direct, s, ws.data(), ps.data());
  conv_pack_weight(ConvTactic::Depthwise, d, wd.data(), pd.data());
  conv_pack_weight(ConvTactic::Direct, p, wp.data(), pp.data());
  Floats work(stem_depthwise_project_workspace_floats(s, d, p, threads));
  Epilogue es, ed, ep;
  es.bias = bs.data(), es.bias_per_row = true, es.act = Act::Clip, es.act_alpha = 0.f, es.act_beta = 6.f;
  ed = es, ed.bias = bd.data();
  ep.bias = bp.data(), ep.bias_per_row = true;
  set_expand_bands(ExpandBands::On);  // bands whatever the cores' distance
  auto run = [&](bool bands) {
    kiln::kernels::detail::stem_bands_enabled = bands;
    stem_depthwise_project(s, d, p, x.data(), ps.data(), es, pd.data(), ed, pp.data(), ep, y.data(), work.data(),
                           threads);
  };
  paired_blocks(st, [&] { run(false); }, [&] { run(true); }, "bands_vs_apart", true, "us_apart", "us_bands");
  kiln::kernels::detail::stem_bands_enabled = true;
  set_expand_bands(ExpandBands::Auto);
}

// args: C, H, R, stride, threads: a depthwise layer between channel-blocked activations (bias
// and Clip(0, 6)) on the AVX-512 table's 256-bit halves (depthwise_halves) against its 16-lane
// pair kernels (depthwise_pairs_s1, depthwise_pairs_s2), call by call, order flipped each time:
// `halves_vs_pairs` is the median of the per-call ratios (< 1: the halves are faster).
// args C, H, R, stride: a blocked depthwise layer of C channels on H x H, R x R 'same'.
Conv2dShape depthwise_layer(const benchmark::State& st) {
  Conv2dShape d;
  d.C = d.K = d.group = st.range(0), d.H = d.W = st.range(1), d.R = d.S = st.range(2);
  d.stride_h = d.stride_w = st.range(3);
  d.pad_top = d.pad_left = d.pad_bottom = d.pad_right = d.R / 2;
  d.x_blocked = d.y_blocked = true;
  return d;
}

void BM_DepthwiseHalves(benchmark::State& st) {
  const Conv2dShape d = depthwise_layer(st);
  const int threads = static_cast<int>(st.range(4));
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Floats x(d.C * d.H * d.W), y(d.K * d.out_h() * d.out_w());
  std::vector<float> w(d.K * d.R * d.S), b(d.K);
  for (auto* v : {&w, &b})
    for (auto& f : *v) f = u(rng);
  for (auto& f : x) f = u(rng);
  Floats pw(conv_packed_weight_floats(ConvTactic::Depthwise, d));
  conv_pack_weight(ConvTactic::Depthwise, d, w.data(), pw.data());
  Floats ws(conv_workspace_floats(ConvTactic::Depthwise, d, threads) + 16);
  Epilogue e;
  e.bias = b.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
  auto run = [&](bool halves) {
    kiln::kernels::detail::depthwise_halves_enabled = kiln::kernels::detail::depthwise_halves_s1_enabled = halves;
    conv2d(ConvTactic::Depthwise, d, x.data(), pw.data(), y.data(), e, ws.data(), threads);
  };
  const bool was = kiln::kernels::detail::depthwise_halves_enabled;
  const bool s1_was = kiln::kernels::detail::depthwise_halves_s1_enabled;
  paired_blocks(
      st, [&] { run(false); }, [&] { run(true); }, "halves_vs_pairs", true, "us_pairs", "us_halves");
  kiln::kernels::detail::depthwise_halves_enabled = was;
  kiln::kernels::detail::depthwise_halves_s1_enabled = s1_was;
}

// The in-place 16-channel kernel (depthwise_wide_in_place_avx512, one thread, block by block)
// against the 8-channel kernels (conv2d, one thread) on the same values: the input as 16- and as
// 8-channel blocks, both writing 8-channel blocks. Checks the outputs equal bit for bit first.
void BM_DepthwiseWideInPlace(benchmark::State& st) {
  const Conv2dShape d = depthwise_layer(st);
  if (kernel_table().simd_width != 16 || d.C % 16) {
    st.SkipWithError("needs AVX-512 and channels in 16s");
    return;
  }
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  const int64_t HW = d.H * d.W, RS = d.R * d.S, OHW = d.out_h() * d.out_w();
  Floats x8(d.C * HW), x16(d.C * HW), y8(d.K * OHW), y16(d.K * OHW);
  for (int64_t c = 0; c < d.C; ++c)
    for (int64_t p = 0; p < HW; ++p) {
      const float v = u(rng);
      x8[(c / 8) * HW * 8 + p * 8 + c % 8] = v;
      x16[(c / 16) * HW * 16 + p * 16 + c % 16] = v;
    }
  std::vector<float> w(d.K * RS), b(d.K);
  for (auto* v : {&w, &b})
    for (auto& f : *v) f = u(rng);
  Floats pw(conv_packed_weight_floats(ConvTactic::Depthwise, d));
  conv_pack_weight(ConvTactic::Depthwise, d, w.data(), pw.data());
  Floats ws(conv_workspace_floats(ConvTactic::Depthwise, d, 1) + 16);
  Epilogue e;
  e.bias = b.data(), e.bias_per_row = true, e.act = Act::Clip, e.act_alpha = 0.f, e.act_beta = 6.f;
  const DepthwisePlane g = detail::depthwise_geometry(d);
  auto eight = [&] { conv2d(ConvTactic::Depthwise, d, x8.data(), pw.data(), y8.data(), e, ws.data(), 1); };
  auto sixteen = [&] {
    for (int64_t c0 = 0; c0 < d.C; c0 += 16) {
      detail::depthwise_wide_in_place_avx512(g, x16.data() + c0 * HW, detail::depthwise_pair_weights(d, pw.data(), c0),
                                             y16.data() + (c0 / 8) * OHW * 8, y16.data() + (c0 / 8 + 1) * OHW * 8,
                                             detail::depthwise_wide_out(e, c0), false);
    }
  };
  eight();
  sixteen();
  if (std::memcmp(y8.data(), y16.data(), sizeof(float) * y8.size()) != 0) {
    st.SkipWithError("the 16-channel kernel's floats differ from the 8-channel kernels'");
    return;
  }
  paired_blocks(st, eight, sixteen, "wide_vs_eight", true, "us_eight", "us_wide");
}

// mobilenet_v2's (3x3) and efficientnet_b0's (3x3, 5x5) depthwise layers that the pair kernels
// take (rows of 14 outputs and more).
void pair_kernel_depthwise(benchmark::internal::Benchmark* b) {
  const int64_t layers[][4] = {{96, 112, 3, 2},  {144, 56, 3, 2}, {192, 28, 3, 2}, {144, 56, 5, 2}, {240, 28, 3, 2},
                               {32, 112, 3, 1},  {144, 56, 3, 1}, {192, 28, 3, 1}, {384, 14, 3, 1}, {576, 14, 3, 1},
                               {240, 28, 5, 1},  {480, 14, 5, 1}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], l[3], th});
}

void mobilenet_v2_expands(benchmark::internal::Benchmark* b) {
  const int64_t layers[][3] = {{16, 112, 96}, {32, 28, 192}, {64, 14, 384}, {96, 14, 576}, {160, 7, 960}};
  for (int64_t th : {1, 2})
    for (const auto& l : layers) b->Args({l[0], l[1], l[2], th});
}

BENCHMARK(BM_MaxPool)->Name("MaxPool")->Args({64, 112, 3, 2, 1, 1})->Args({64, 112, 3, 2, 1, 2})->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("Digits")->Apply(digits)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("Stem")->Apply(stems)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("Resnet50")->Apply(resnet50)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("MobilenetV2Pw")->Apply(mobilenet_v2_pointwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("EfficientNetB0Pw")->Apply(efficientnet_b0_pointwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("MobilenetV2Dw")->Apply(mobilenet_v2_depthwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Conv)->Name("EfficientNetB0Dw")->Apply(efficientnet_b0_depthwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExpandOutputBlocks)->Name("MobilenetV2ExpandOut8vs16")->Apply(mobilenet_v2_expands)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ExpandDepthwise)->Name("MobilenetV2ExpandDepthwise")->Apply(mobilenet_v2_expand_depthwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DepthwiseProject)->Name("MobilenetV2DepthwiseProject")->Apply(mobilenet_v2_depthwise_project)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StemDepthwiseProject)->Name("MobilenetV2StemDepthwiseProject")->Arg(1)->Arg(2)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DepthwiseHalves)->Name("DepthwiseHalves")->Apply(pair_kernel_depthwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DepthwiseWideInPlace)->Name("DepthwiseWideInPlace")->Apply(pair_kernel_depthwise)->UseRealTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DepthwiseBlocks)->Name("MobilenetV2Dw16vs8")->Apply(mobilenet_v2_small_depthwise)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
