// One artifact, two settings of a runtime switch, alternated run by run in one process:
//
//   build/bench/runtime_modes_bench ARTIFACT.kiln PAIRS THREADS SWITCH
//
// SWITCH is expand-bands, claim-output or write-prefetch (dispatch.h), tapered-parts or
// speed-shares (parallel.h), fetch-ahead (kiln/runtime/step.h), dw-halves or dw-halves-s1
// (kernels/depthwise_halves.h), direct-stem or stem-bands (kernels/conv_stem.h), keep-rows
// (kernels/expand_kept_rows.h), k-split (kernels/depthwise_project_band.h) or pair-tail
// (kernels/pair_tail.h): off, or on for
// both Auto and On; side A runs it Off, side B Auto, in alternating order pair by pair (with
// "=on" after the name: A Auto, B On). Prints, for the pairs run while the cores measured close
// and those while they measured far
// (core_round_trip_ns, every 25 pairs, against kFarCoresNs), each side's median and the median
// of the pairs' B/A ratios. SWITCH artifact=OTHER.kiln instead runs OTHER as side B (the same
// inputs): two compilations of one model, e.g. with a lowering rule off and on.
// KILN_AB_BLOCK=K in the environment runs K runs a side in turn instead of one, and takes the
// median of each block's second half: what only one side touches (its own buffers, its part of
// the arena) is then as warm as when that side runs alone, not two runs cold.
// Separate processes (scripts/ab_bench.py) swing by 20-40% from round to round on a shared host;
// pairs of back-to-back runs see the same minute. The inputs are random normal floats (seed 7)
// of each input's declared shape (symbolic dims must be fixed at compile time: --dim N=1), or,
// with KILN_AB_INPUTS=DIR in the environment, DIR/NAME.npy for each input NAME, of its declared
// dtype and shape (a zoo model's build/zoo/MODEL/inputs: gpt2_decode's int64 token ids).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kiln/analysis/profile.h"
#include "kiln/kernels/dispatch.h"
#include "kiln/kernels/parallel.h"
#include "kiln/ir/error.h"
#include "kiln/ir/npy.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/step.h"
#include "kernels/conv_stem.h"
#include "kernels/depthwise_halves.h"
#include "kernels/depthwise_wide.h"
#include "kernels/depthwise_project_band.h"
#include "kernels/expand_kept_rows.h"
#include "kernels/pair_tail.h"

namespace {

using namespace kiln;
using analysis::median;

// Sets the named switch Off (b false) or Auto (b true); with the suffix "=on", Auto (b false) or
// On (b true). False for an unknown name.
bool set_switch(std::string name, bool b) {
  using namespace kiln::kernels;
  const bool on = name.size() > 3 && name.compare(name.size() - 3, 3, "=on") == 0;
  if (on) name.resize(name.size() - 3);
  const int mode = on + b;  // 0 Off, 1 Auto, 2 On
  auto pick = [mode](auto off, auto automatic, auto pinned) {
    return mode == 0 ? off : mode == 1 ? automatic : pinned;
  };
  if (name == "expand-bands") set_expand_bands(pick(ExpandBands::Off, ExpandBands::Auto, ExpandBands::On));
  else if (name == "claim-output") set_claim_output(pick(ClaimOutput::Off, ClaimOutput::Auto, ClaimOutput::On));
  else if (name == "tapered-parts") set_tapered_parts(mode != 0);
  else if (name == "speed-shares") set_speed_shares(mode != 0);
  else if (name == "fetch-ahead") kiln::runtime::set_fetch_ahead(mode != 0);
  else if (name == "dw-halves") kiln::kernels::detail::depthwise_halves_enabled = mode != 0;
  else if (name == "dw-halves-s1") kiln::kernels::detail::depthwise_halves_s1_enabled = mode != 0;
  else if (name == "direct-stem") kiln::kernels::detail::direct_stem_enabled = mode != 0;
  else if (name == "stem-bands") kiln::kernels::detail::stem_bands_enabled = mode != 0;
  else if (name == "keep-rows") kiln::kernels::detail::expand_keeps_rows = mode != 0;
  else if (name == "k-split") kiln::kernels::detail::depthwise_project_k_split_enabled = mode != 0;
  else if (name == "expand-wide") kiln::kernels::detail::expand_wide_mid_enabled = mode != 0;
  else if (name == "dw-in-place") kiln::kernels::detail::depthwise_wide_in_place_enabled = mode != 0;
  else if (name == "pair-tail") kiln::kernels::detail::three_quarter_pairs_enabled = mode != 0;
  else if (name == "write-prefetch")
    set_write_prefetch(pick(WritePrefetch::Off, WritePrefetch::Auto, WritePrefetch::On));
  else return false;
  return true;
}

int run(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr,
                 "usage: runtime_modes_bench ARTIFACT.kiln PAIRS THREADS "
                 "expand-bands|claim-output|write-prefetch|tapered-parts|speed-shares|fetch-ahead|dw-halves|dw-halves-s1|direct-stem|"
                 "stem-bands|keep-rows|k-split|pair-tail|expand-wide|dw-in-place[=on] | artifact=OTHER.kiln\n");
    return 1;
  }
  const int pairs = std::atoi(argv[2]), threads = std::atoi(argv[3]);
  const char* block_env = std::getenv("KILN_AB_BLOCK");
  const int block = block_env ? std::max(1, std::atoi(block_env)) : 1;
  const std::string which = argv[4];
  // "artifact=PATH": side B runs that artifact (the same inputs), side A the first.
  const bool two_artifacts = which.rfind("artifact=", 0) == 0;
  if (pairs < 1 || threads < 1 || !(two_artifacts || set_switch(which, false))) {
    std::fprintf(stderr, "runtime_modes_bench: PAIRS and THREADS must be positive and SWITCH one of those named, or "
                         "artifact=OTHER.kiln\n");
    return 1;
  }
  auto exe = Executable::load(argv[1]);
  auto exe_b = two_artifacts ? Executable::load(which.substr(9)) : nullptr;
  const Graph& g = *exe->model().graph;
  std::vector<Tensor> in, out;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  const char* inputs_dir = std::getenv("KILN_AB_INPUTS");
  for (const auto& v : g.inputs) {
    KILN_CHECK(v->shape.rank_known && v->shape.is_static(), "input ", v->name,
               " has a symbolic or unknown dim: compile the artifact with --dim");
    if (inputs_dir) {
      const std::string path = std::string(inputs_dir) + "/" + v->name + ".npy";
      Tensor t = read_npy(path);
      KILN_CHECK(t.dtype() == v->dtype && t.dims() == v->shape.static_dims(), path, " holds ", dtype_name(t.dtype()),
                 dims_str(t.dims()), " where input ", v->name, " is ", dtype_name(v->dtype),
                 dims_str(v->shape.static_dims()));
      in.push_back(std::move(t));
      continue;
    }
    KILN_CHECK(v->dtype == DType::f32, "input ", v->name,
               " is not f32: set KILN_AB_INPUTS=DIR with a NAME.npy for each input (e.g. build/zoo/MODEL/inputs)");
    Tensor t(DType::f32, v->shape.static_dims());
    float* p = t.data<float>();
    for (int64_t i = 0; i < t.numel(); ++i) p[i] = normal(rng);
    in.push_back(std::move(t));
  }
  RunOptions ro;
  ro.threads = threads;
  auto run_side = [&](int side) {
    if (two_artifacts) (side == 1 ? exe_b : exe)->run(in, out, ro);
    else set_switch(which, side == 1), exe->run(in, out, ro);
  };
  for (int i = 0; i < 100; ++i) run_side(i % 2);
  std::vector<double> ms[2][2], ratio[2];  // [close, far][A, B]
  bool far = false;
  for (int i = 0; i < pairs; ++i) {
    if (i % 25 == 0) far = kernels::core_round_trip_ns() > kernels::kFarCoresNs;
    double t[2];
    for (int k = 0; k < 2; ++k) {
      const int side = i % 2 ? 1 - k : k;
      // A block of `block` runs a side: the first half settles the caches into that side's
      // steady state (what one side alone touches, its own buffers, is otherwise two runs cold),
      // the second half's median is the side's time.
      std::vector<double> runs;
      for (int r = 0; r < block; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        run_side(side);
        if (2 * r >= block) runs.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      }
      t[side] = median(runs);
    }
    ms[far][0].push_back(t[0]);
    ms[far][1].push_back(t[1]);
    ratio[far].push_back(t[1] / t[0]);
  }
  std::printf("%s, %d threads, A / B = %s\n", argv[1], threads,
              two_artifacts ? ("this / " + which.substr(9)).c_str()
              : which.find("=on") != std::string::npos ? "auto / on" : "off / auto");
  for (int f = 0; f < 2; ++f) {
    if (ratio[f].empty()) continue;
    std::printf("  %s: %zu pairs, A %.3f ms, B %.3f ms, B/A pair by pair %.4f\n", f ? "far" : "close",
                ratio[f].size(), median(ms[f][0]), median(ms[f][1]), median(ratio[f]));
    // The host's fast and slow minutes apart: the pairs whose mean time is under / over the median.
    std::vector<double> mean, fast, slow;
    for (size_t i = 0; i < ratio[f].size(); ++i) mean.push_back(ms[f][0][i] + ms[f][1][i]);
    const double mid = median(mean);
    for (size_t i = 0; i < ratio[f].size(); ++i) (mean[i] <= mid ? fast : slow).push_back(ratio[f][i]);
    if (!fast.empty() && !slow.empty())
      std::printf("    faster half B/A %.4f, slower half B/A %.4f\n", median(fast), median(slow));
  }
  if (threads > 1) std::printf("  thread 1's measured speed against the caller's at the end: %.3f\n",
                               kernels::thread_speed(1));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_modes_bench: %s\n", e.what());
    return 1;
  }
}
