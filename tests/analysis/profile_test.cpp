// kiln profile: verdicts on synthetic numbers, suggestions derived from the numbers, the JSON /
// trace / HTML renderings of a real profiled run, the source map, and the CLI's one-line errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "toy_mlp.h"
#include "kiln/analysis/profile.h"
#include "kiln/analysis/profile_scaling.h"
#include "kiln/compiler/compile.h"
#include "kiln/ir/error.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/plan/json.h"
#include "kiln/runtime/artifact.h"

namespace kiln::analysis {
namespace {

namespace fs = std::filesystem;

fs::path test_dir() {
  fs::path d = fs::temp_directory_path() / ("kiln_profile_test_" + std::to_string(getpid()));
  fs::create_directories(d);
  return d;
}

Roof toy_roof() {
  Roof r;
  r.peak_gflops = 100;
  r.bandwidth_gbs = 10;
  r.dispatch_us = 5;
  return r;
}

TEST(ProfileVerdict, ComputeMemoryAndOverheadFromTheNumbers) {
  Roof r = toy_roof();
  // 1 GFLOP over 1 MB: 10 ms of compute against 0.1 ms of memory; measured 20 ms = half the roof.
  KernelJudgement c = judge_kernel(1e9, 1e6, 20, r);
  EXPECT_EQ(c.verdict, Bound::compute);
  EXPECT_DOUBLE_EQ(c.roof_ms, 10);
  EXPECT_DOUBLE_EQ(c.roof_fraction, 0.5);
  EXPECT_DOUBLE_EQ(c.gflops, 50);
  EXPECT_DOUBLE_EQ(c.intensity, 1000);
  // 100 MB at 10 GB/s: 10 ms of memory; 1 MFLOP is nothing.
  KernelJudgement m = judge_kernel(1e6, 1e8, 12.5, r);
  EXPECT_EQ(m.verdict, Bound::memory);
  EXPECT_DOUBLE_EQ(m.roof_ms, 10);
  EXPECT_DOUBLE_EQ(m.roof_fraction, 0.8);
  EXPECT_DOUBLE_EQ(m.gbs, 8);
  // 10 KFLOP and 10 KB: 1 us at the roof, under the 5 us dispatch: overhead, however slow.
  KernelJudgement o = judge_kernel(1e4, 1e4, 0.05, r);
  EXPECT_EQ(o.verdict, Bound::overhead);
  EXPECT_NEAR(o.roof_ms, 1e-3, 1e-12);
  // Just above the dispatch cost it is judged by its roof again.
  EXPECT_EQ(judge_kernel(1e4, 6e4, 0.05, r).verdict, Bound::memory);
}

TEST(ProfileVerdict, RoofForThreadsUsesPerCoreOrAllCoreFigures) {
  MachinePeaks m;
  m.cores = 4;
  m.fp32_gflops_per_core = 100;
  m.fp32_gflops_all_cores = 380;
  m.dram_gbs_one_core = 20;
  m.dram_gbs_all_cores = 50;
  EXPECT_DOUBLE_EQ(roof_for(m, 1).peak_gflops, 100);
  EXPECT_DOUBLE_EQ(roof_for(m, 1).bandwidth_gbs, 20);
  EXPECT_DOUBLE_EQ(roof_for(m, 2).peak_gflops, 200);
  EXPECT_DOUBLE_EQ(roof_for(m, 2).bandwidth_gbs, 50);
  EXPECT_DOUBLE_EQ(roof_for(m, 4).peak_gflops, 380);
  EXPECT_DOUBLE_EQ(roof_for(m, 8).peak_gflops, 380);
  EXPECT_THROW(roof_for(m, 0), Error);
  EXPECT_EQ(roof_for(m, 1).int8_peak_gops, 0);  // not measured: int8 kernels judged against FP32
  m.int8_gops_per_core = 400;
  m.int8_gops_all_cores = 1500;
  EXPECT_DOUBLE_EQ(roof_for(m, 2).int8_peak_gops, 800);
  EXPECT_DOUBLE_EQ(roof_for(m, 4).int8_peak_gops, 1500);
}

// INT8 kernels are judged against the INT8 peak: 1.5 GOP in 10 ms is 150 GOP/s, 75% of a
// 200 GOP/s INT8 roof, where the 100 GFLOP/s FP32 roof would call it 150%.
TEST(ProfileVerdict, Int8KernelsUseTheInt8Peak) {
  Roof r;
  r.peak_gflops = 100, r.int8_peak_gops = 200, r.bandwidth_gbs = 50;
  EXPECT_NEAR(judge_kernel(1.5e9, 1e6, 10, r, /*int8=*/true).roof_fraction, 0.75, 1e-9);
  EXPECT_NEAR(judge_kernel(1.5e9, 1e6, 10, r).roof_fraction, 1.5, 1e-9);
  EXPECT_TRUE(int8_op("kiln.QConv"));
  EXPECT_FALSE(int8_op("kiln.FusedConv"));
}

KernelProfile kernel(const std::string& name, const std::string& op, double ms, double flops, double bytes,
                     bool fast = true) {
  KernelProfile k;
  k.name = name;
  k.op = op;
  k.ms = ms;
  k.flops = flops;
  k.bytes = bytes;
  k.fast = fast;
  return k;
}

const Suggestion* find(const std::vector<Suggestion>& s, const std::string& kind) {
  for (const auto& x : s)
    if (x.kind == kind) return &x;
  return nullptr;
}

TEST(ProfileSuggest, UnfusedChainAndReferenceKernelComeFromTheNumbers) {
  Model m = toy_mlp(Dim(8));
  Profile p;
  p.roof = toy_roof();
  p.kernels = {kernel("mm", "MatMul", 1.0, 2 * 8 * 64 * 64, 4 * (8 * 64 * 2 + 64 * 64)),
               kernel("bias", "Add", 0.4, 512, 4 * (512 * 2 + 64)), kernel("act", "Relu", 0.3, 512, 4 * 1024),
               kernel("tr", "Transpose", 0.2, 0, 4 * 1024, false)};
  summarize(p, {});
  std::vector<Suggestion> s = suggest(p, *m.graph);
  const Suggestion* fuse = find(s, "fuse");
  ASSERT_NE(fuse, nullptr);
  // The chain is MatMul -> Add -> Relu (the Transpose is no elementwise consumer); fusing folds
  // away the two elementwise kernels: 0.4 + 0.3 ms.
  EXPECT_NE(fuse->detail.find("'mm'"), std::string::npos) << fuse->detail;
  EXPECT_NE(fuse->detail.find("'bias'"), std::string::npos);
  EXPECT_NE(fuse->detail.find("'act'"), std::string::npos);
  EXPECT_EQ(fuse->detail.find("'tr'"), std::string::npos);
  EXPECT_NEAR(fuse->ms, 0.7, 1e-12);
  const Suggestion* ref = find(s, "reference-kernel");
  ASSERT_NE(ref, nullptr);
  EXPECT_NE(ref->detail.find("Transpose"), std::string::npos);
  EXPECT_NEAR(ref->ms, 0.2, 1e-12);
  EXPECT_EQ(s.front().kind, "fuse");  // largest time at stake first

  // The same graph with the elementwise kernels taking no time: nothing to gain from fusing.
  p.kernels[1].ms = p.kernels[2].ms = 0;
  summarize(p, {});
  EXPECT_EQ(find(suggest(p, *m.graph), "fuse"), nullptr);
}

TEST(ProfileSuggest, MemoryBoundWeightGemmAndSlowComputeGemm) {
  Model m = toy_mlp(Dim(8));
  Profile p;
  p.roof = toy_roof();
  // 16 KiB of weights out of 20 KiB moved: memory-bound at 10 GB/s (2 us), measured 40 us.
  double bytes = 4 * (8 * 64 * 2 + 64 * 64);
  p.kernels = {kernel("mm", "MatMul", 0.04, 2 * 8 * 64 * 64, bytes)};
  p.roof.dispatch_us = 1;
  summarize(p, {});
  ASSERT_EQ(p.kernels[0].j.verdict, Bound::memory);
  std::vector<Suggestion> s = suggest(p, *m.graph);
  const Suggestion* q = find(s, "quantize-weights");
  ASSERT_NE(q, nullptr);
  EXPECT_NE(q->detail.find("8 rows"), std::string::npos) << q->detail;
  EXPECT_NEAR(q->ms, 0.04 * 0.75 * (4 * 64 * 64) / bytes, 1e-12);
  EXPECT_EQ(q->detail.find("into cache"), std::string::npos) << q->detail;
  EXPECT_EQ(find(s, "tune"), nullptr);
  // Its weights fetched ahead by an earlier kernel: the suggestion says they come from cache.
  Profile fetched = p;
  fetched.kernels.insert(fetched.kernels.begin(), kernel("conv", "kiln.FusedConv", 0.1, 1e6, 1e5));
  fetched.kernels[0].fetch_ahead_bytes = 4 * 64 * 64, fetched.kernels[0].fetch_ahead_for = "mm";
  summarize(fetched, {});
  const std::vector<Suggestion> sf = suggest(fetched, *m.graph);
  const Suggestion* qf = find(sf, "quantize-weights");
  ASSERT_NE(qf, nullptr);
  EXPECT_NE(qf->detail.find("(kiln.FusedConv 'conv' fetches them into cache as it computes, 16.00 KiB: they are read from cache here"),
            std::string::npos)
      << qf->detail;
  EXPECT_NEAR(qf->ms, q->ms, 1e-12);  // the same estimate

  // The same kernel with 100x the FLOPs: compute-bound at 6.6 ms of roof, measured 20 ms (33%).
  p.kernels[0].flops = 6.6e8;
  p.kernels[0].ms = 20;
  summarize(p, {});
  ASSERT_EQ(p.kernels[0].j.verdict, Bound::compute);
  s = suggest(p, *m.graph);
  const Suggestion* t = find(s, "tune");
  ASSERT_NE(t, nullptr);
  EXPECT_NEAR(t->ms, 20 - 6.6, 1e-9);
  EXPECT_EQ(find(s, "quantize-weights"), nullptr);
  // At 60% of the roof there is nothing to tune.
  p.kernels[0].ms = 11;
  summarize(p, {});
  EXPECT_EQ(find(suggest(p, *m.graph), "tune"), nullptr);
}

// --scaling from synthetic numbers: the model runs 10 -> 5.5 ms (1.82x); kernel "a" scales with
// it, "b" not at all (it loses 2 - 2 / 1.82 ms), "c" gets slower on two threads; a kernel list
// that does not match is an error.
TEST(ProfileScaling, TimeLostAgainstTheModelsSpeedupAndKernelsThatGetSlower) {
  auto profile = [](int threads, double plain, std::vector<std::pair<std::string, double>> ks) {
    Profile p;
    p.threads = threads;
    p.plain_ms = plain;
    for (auto& [name, ms] : ks) {
      KernelProfile k;
      k.name = name, k.op = "Op", k.ms = ms;
      p.kernels.push_back(k);
    }
    return p;
  };
  Profile one = profile(1, 10, {{"a", 7.7}, {"b", 2}, {"c", 0.3}});
  Profile two = profile(2, 5.5, {{"a", 4.2}, {"b", 2}, {"c", 0.6}});
  Scaling s = compare_scaling(one, two);
  EXPECT_EQ(s.threads, 2);
  EXPECT_DOUBLE_EQ(s.speedup, 10 / 5.5);
  ASSERT_EQ(s.kernels.size(), 3u);
  EXPECT_DOUBLE_EQ(s.kernels[1].speedup, 1);
  EXPECT_NEAR(s.kernels[1].lost_ms, 2 - 2 / (10 / 5.5), 1e-12);
  EXPECT_NEAR(s.kernels[0].lost_ms, 4.2 - 7.7 / (10 / 5.5), 1e-12);
  const std::string text = scaling_to_text(s, 10);
  EXPECT_NE(text.find("1 -> 2 threads: a plain run 10.000 -> 5.500 ms (1.82x)"), std::string::npos) << text;
  EXPECT_LT(text.find("  b "), text.find("  c ")) << text;  // b loses 0.9 ms, c 0.44
  EXPECT_NE(text.find("slower on 2 threads than on 1: 1 kernels, 0.3000 ms more in all: c"), std::string::npos) << text;
  json::Value j = scaling_json(s);
  const auto& worse = j.find("slower_kernels")->as_array("slower_kernels");
  ASSERT_EQ(worse.size(), 1u);
  EXPECT_EQ(worse[0].as_string("slower"), "c");
  EXPECT_DOUBLE_EQ(j.find("kernels")->as_array("kernels")[2].find("ms_one_thread")->as_double("ms"), 0.3);
  Profile other = profile(2, 5.5, {{"a", 4.2}, {"x", 2}, {"c", 0.6}});
  EXPECT_THROW(compare_scaling(one, other), Error);
  EXPECT_THROW(compare_scaling(one, profile(2, 5.5, {{"a", 4.2}})), Error);
}

TEST(ProfileSourceMap, FusedNodesCoverTheNodesTheyReplaced) {
  Model original = toy_mlp(Dim(8));
  // What epilogue fusion makes of it: one node taking over 'r' (MatMul + Add + Relu), the
  // transpose kept, and a node with a new output that covers nothing.
  Model compiled;
  compiled.opsets[""] = 17;
  Graph& g = *compiled.graph;
  Value* x = g.add_input("x", DType::f32, Shape({Dim(8), Dim(64)}));
  Value* w = g.add_initializer("w.packed", Tensor(DType::f32, {64, 64}));
  Value* r = g.add_node("MatMul", {x, w}, {"r"}, {}, "fused")->outputs[0];
  Value* t = g.add_node("Transpose", {r}, {"t"}, {{"perm", std::vector<int64_t>{1, 0}}}, "tr")->outputs[0];
  Value* n = g.add_node("Relu", {t}, {"new_value"}, {}, "extra")->outputs[0];
  g.outputs = {n};
  SourceMap map = map_sources(*original.graph, g);
  ASSERT_EQ(map.count("fused"), 1u);
  std::vector<std::string> names;
  for (const auto& s : map.at("fused")) names.push_back(s.name);
  EXPECT_EQ(names, (std::vector<std::string>{"mm", "bias", "act"}));
  EXPECT_GT(map.at("fused")[0].flops, 0);  // costs read from the original graph
  ASSERT_EQ(map.count("tr"), 1u);
  EXPECT_EQ(map.at("tr").size(), 1u);
  EXPECT_EQ(map.count("extra"), 0u);
}

// A real compiled run of the MLP: the JSON has the documented fields, the trace is well-formed
// and has one event per step per run, the HTML has one circle per kernel.
class ProfileRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    fs::path dir = test_dir();
    Model m = toy_mlp(Dim(8));
    std::string kir = (dir / "mlp.kir").string();
    std::ofstream(kir) << print_model(m);
    std::string art = (dir / "mlp.kiln").string();
    compiler::CompileOptions copt;
    copt.cache_dir = (dir / "cache").string();
    compiler::compile_file(kir, art, copt);
    exe_ = Executable::load(art).release();
    costed_ = new Model(read_artifact(art).model);
    ops::infer_shapes(*costed_);
    sources_ = new SourceMap(map_sources(*m.graph, *costed_->graph));
    ProfileOptions opt;
    opt.runs = 3;
    opt.warmup = 1;
    profile_ = new Profile(profile_model(*exe_, inputs(), *costed_, *sources_, toy_roof(), opt));
    profile_->model = kir;
  }
  static void TearDownTestSuite() {
    delete profile_;
    delete sources_;
    delete costed_;
    delete exe_;
    std::error_code ec;
    fs::remove_all(test_dir(), ec);
  }
  static std::vector<Tensor> inputs() { return {Tensor(DType::f32, {8, 64})}; }
  static Profile* profile_;
  static Executable* exe_;
  static Model* costed_;
  static SourceMap* sources_;
};
Profile* ProfileRun::profile_ = nullptr;
Executable* ProfileRun::exe_ = nullptr;
Model* ProfileRun::costed_ = nullptr;
SourceMap* ProfileRun::sources_ = nullptr;

// ProfileOptions::run_counts (kiln profile --placement): asked before and after each timed pair,
// a pair counts only when both answers are yes, and others run until opt.runs count. Here every
// fifth answer is no: pairs 1, 2 and 4 count, pair 3 (answers 5 and 6) is dropped.
TEST_F(ProfileRun, RunsCountOnlyWhenAskedBeforeAndAfter) {
  int asked = 0;
  ProfileOptions opt;
  opt.runs = 3;
  opt.warmup = 0;
  opt.run_counts = [&] { return ++asked % 5 != 0; };
  Profile p = profile_model(*exe_, inputs(), *costed_, *sources_, toy_roof(), opt);
  EXPECT_EQ(asked, 8);
  EXPECT_EQ(p.timeline.size(), 3u);
  EXPECT_EQ(p.run_start_ms.size(), 3u);
  EXPECT_LT(p.run_start_ms[1], p.run_start_ms[2]);
  // The same for --balance's and --rerun's runs of their own.
  asked = 0;
  auto runs = extra_profiled_runs(*exe_, inputs(), opt, "--test", [&](std::vector<Tensor>& out, const RunOptions& ro) {
    return exe_->profile_run(inputs(), out, ro);
  });
  EXPECT_EQ(asked, 8);
  EXPECT_EQ(runs.size(), 3u);
  // A hook that gives up stops the profile with its error.
  opt.run_counts = []() -> bool { throw Error("the cores were never close"); };
  EXPECT_THROW(profile_model(*exe_, inputs(), *costed_, *sources_, toy_roof(), opt), Error);
}

TEST_F(ProfileRun, JsonHasTheDocumentedFields) {
  const Profile& p = *profile_;
  ASSERT_FALSE(p.kernels.empty());
  EXPECT_EQ(p.timeline.size(), 3u);
  EXPECT_GT(p.plain_ms, 0);
  EXPECT_GT(p.profiled_ms, 0);
  json::Value j = json::parse(profile_to_json(p), "profile json");
  for (const char* k : {"total_ms", "plain_ms", "profiled_ms", "overhead_fraction", "threads", "runs"})
    ASSERT_TRUE(j.find(k) && j.find(k)->is_number()) << k;
  const json::Value* ks = j.find("kernels");
  ASSERT_TRUE(ks && ks->is_array());
  ASSERT_EQ(ks->as_array("kernels").size(), p.kernels.size());
  double sum = 0;
  bool covers_mm = false;
  for (const json::Value& k : ks->as_array("kernels")) {
    ASSERT_TRUE(k.find("name") && k.find("name")->is_string());
    ASSERT_TRUE(k.find("nodes") && k.find("nodes")->is_array());
    for (const char* f : {"ms", "flops", "bytes", "share", "gflops", "gbs", "roof_fraction"})
      ASSERT_TRUE(k.find(f) && k.find(f)->is_number()) << f;
    const std::string& v = k.find("verdict")->as_string("verdict");
    EXPECT_TRUE(v == "compute" || v == "memory" || v == "overhead") << v;
    sum += k.find("ms")->as_double("ms");
    for (const json::Value& n : k.find("nodes")->as_array("nodes")) covers_mm |= n.as_string("nodes[]") == "mm";
  }
  EXPECT_NEAR(sum, j.find("total_ms")->as_double("total_ms"), 1e-9);
  EXPECT_TRUE(covers_mm);  // the MatMul's kernel names the ONNX node it came from
  // The GEMM kernel's FLOPs are the op table's: 2 x 8 x 64 x 64.
  bool found = false;
  for (const auto& k : p.kernels)
    if (std::find(k.nodes.begin(), k.nodes.end(), "mm") != k.nodes.end()) {
      EXPECT_DOUBLE_EQ(k.flops, 2.0 * 8 * 64 * 64 + (k.nodes.size() > 1 ? 2.0 * 8 * 64 : 0)) << k.op;
      found = true;
    }
  EXPECT_TRUE(found);
}

TEST_F(ProfileRun, TraceIsChromeTraceJsonWithOneEventPerStepPerRun) {
  const Profile& p = *profile_;
  json::Value j = json::parse(profile_to_trace(p), "trace");
  const json::Value* ev = j.find("traceEvents");
  ASSERT_TRUE(ev && ev->is_array());
  size_t complete = 0;
  double last_end_in_run0 = 0;
  for (const json::Value& e : ev->as_array("traceEvents")) {
    ASSERT_TRUE(e.find("ph") && e.find("pid") && e.find("tid")) << "every event names its process and thread";
    if (e.find("ph")->as_string("ph") != "X") continue;
    ++complete;
    ASSERT_TRUE(e.find("ts")->is_number() && e.find("dur")->is_number() && e.find("name")->is_string());
    EXPECT_GE(e.find("dur")->as_double("dur"), 0);
    if (e.find("args")->find("run")->as_double("run") == 0) {
      EXPECT_GE(e.find("ts")->as_double("ts") + 1e-9, last_end_in_run0);  // steps follow each other
      last_end_in_run0 = e.find("ts")->as_double("ts") + e.find("dur")->as_double("dur");
    }
  }
  EXPECT_EQ(complete, p.kernels.size() * p.timeline.size());
}

TEST_F(ProfileRun, HtmlHasAnSvgRooflineWithOnePointPerKernel) {
  const Profile& p = *profile_;
  std::string html = profile_to_html(p);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  ASSERT_NE(html.find("<svg"), std::string::npos);
  size_t circles = 0;
  for (size_t pos = html.find("class=\"kernel\""); pos != std::string::npos; pos = html.find("class=\"kernel\"", pos + 1))
    ++circles;
  EXPECT_EQ(circles, p.kernels.size());
  EXPECT_NE(html.find("class=\"roof\""), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained, no script
  for (const auto& k : p.kernels) EXPECT_NE(html.find(k.name), std::string::npos);
}

// Runs the CLI; returns its exit code and stdout + stderr.
std::pair<int, std::string> run_cli(const std::string& args) {
  fs::path kiln = fs::path(KILN_BINARY_DIR) / "bin" / "kiln";
  std::string cmd = kiln.string() + " profile " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (p && fgets(buf, sizeof buf, p)) out += buf;
  int rc = p ? pclose(p) : -1;
  return {WIFEXITED(rc) ? WEXITSTATUS(rc) : -1, out};
}

TEST(ProfileCli, ErrorsAreOneLine) {
  if (!fs::exists(fs::path(KILN_BINARY_DIR) / "bin" / "kiln")) GTEST_SKIP() << "kiln CLI not built";
  std::string digits = std::string(KILN_SOURCE_DIR) + "/build/zoo/digits_cnn/model.onnx";
  auto [rc, out] = run_cli("/nonexistent/model.onnx");
  EXPECT_EQ(rc, 1);
  EXPECT_EQ(out, "kiln: kiln profile: /nonexistent/model.onnx: cannot open\n");
  for (const char* bad : {"--top 0", "--runs 0", "--threads 0"}) {
    auto [rc2, out2] = run_cli(digits + " " + bad);
    EXPECT_EQ(rc2, 1) << bad;
    EXPECT_EQ(std::count(out2.begin(), out2.end(), '\n'), 1) << out2;
    EXPECT_NE(out2.find(std::string(bad).substr(0, std::string(bad).find(' '))), std::string::npos) << out2;
  }
  auto [rc3, out3] = run_cli(digits + " --top many");
  EXPECT_EQ(rc3, 1);
  EXPECT_EQ(std::count(out3.begin(), out3.end(), '\n'), 1) << out3;
  auto [rc4, out4] = run_cli(digits + " --scaling --threads 1");
  EXPECT_EQ(rc4, 1);
  EXPECT_EQ(out4, "kiln: --scaling compares --threads N with one thread: give --threads 2 or more\n");
  auto [rc5, out5] = run_cli(digits + " --placement close --threads 1");
  EXPECT_EQ(rc5, 1);
  EXPECT_EQ(out5, "kiln: --placement is where the host has the threads' cores: give --threads 2 or more\n");
  auto [rc6, out6] = run_cli(digits + " --placement near --threads 2");
  EXPECT_EQ(rc6, 1);
  EXPECT_EQ(out6, "kiln: kiln profile: --placement takes 'close' or 'far', got 'near'\n");
}

// --scaling --json on digits_cnn: a "scaling" member whose kernels are the profile's, each with its
// one-thread time and speed-up = ms_one_thread / ms.
TEST(ProfileCli, ScalingJsonPairsEveryKernelWithItsOneThreadTime) {
  if (!fs::exists(fs::path(KILN_BINARY_DIR) / "bin" / "kiln")) GTEST_SKIP() << "kiln CLI not built";
  std::string digits = std::string(KILN_SOURCE_DIR) + "/build/zoo/digits_cnn/model.onnx";
  if (!fs::exists(digits)) GTEST_SKIP() << "zoo not prepared";
  auto [rc, out] = run_cli(digits + " --batch 4 --threads 2 --runs 3 --warmup 1 --scaling --json");
  ASSERT_EQ(rc, 0) << out;
  json::Value j = json::parse(out.substr(out.find('{')), "profile json");
  const json::Value* sc = j.find("scaling");
  ASSERT_TRUE(sc && sc->find("kernels")) << out;
  EXPECT_EQ(sc->find("threads")->as_double("threads"), 2);
  const auto& ks = sc->find("kernels")->as_array("kernels");
  ASSERT_EQ(ks.size(), j.find("kernels")->as_array("kernels").size());
  for (size_t i = 0; i < ks.size(); ++i) {
    EXPECT_EQ(ks[i].find("name")->as_string("name"), j.find("kernels")->as_array("k")[i].find("name")->as_string("n"));
    const double one = ks[i].find("ms_one_thread")->as_double("one"), two = ks[i].find("ms")->as_double("ms");
    EXPECT_GT(one, 0);
    EXPECT_NEAR(ks[i].find("speedup")->as_double("speedup"), one / two, 1e-9 * (1 + one / two));
  }
  EXPECT_TRUE(sc->find("slower_kernels")->is_array());
}

// --rerun --json on digits_cnn: a "rerun" member whose kernels are the profile's (less those that
// write what they read), each with its second call and cold_ms = ms - again_ms; the text form
// has its section.
TEST(ProfileCli, RerunPairsEachKernelWithItsSecondCall) {
  if (!fs::exists(fs::path(KILN_BINARY_DIR) / "bin" / "kiln")) GTEST_SKIP() << "kiln CLI not built";
  std::string digits = std::string(KILN_SOURCE_DIR) + "/build/zoo/digits_cnn/model.onnx";
  if (!fs::exists(digits)) GTEST_SKIP() << "zoo not prepared";
  auto [rc, out] = run_cli(digits + " --batch 4 --threads 1 --runs 3 --warmup 1 --rerun --json");
  ASSERT_EQ(rc, 0) << out;
  json::Value j = json::parse(out.substr(out.find('{')), "profile json");
  const json::Value* rr = j.find("rerun");
  ASSERT_TRUE(rr && rr->find("kernels") && rr->find("not_rerun")) << out;
  const auto& ks = rr->find("kernels")->as_array("kernels");
  EXPECT_EQ(ks.size() + rr->find("not_rerun")->as_array("not_rerun").size(),
            j.find("kernels")->as_array("kernels").size());
  ASSERT_FALSE(ks.empty());
  for (const auto& k : ks) {
    const double ms = k.find("ms")->as_double("ms"), again = k.find("again_ms")->as_double("again_ms");
    EXPECT_GT(ms, 0);
    EXPECT_GT(again, 0);
    EXPECT_NEAR(k.find("cold_ms")->as_double("cold_ms"), ms - again, 1e-12);
  }
  auto [rc2, text] = run_cli(digits + " --batch 4 --threads 1 --runs 2 --warmup 0 --rerun");
  ASSERT_EQ(rc2, 0) << text;
  EXPECT_NE(text.find("data movement (--rerun, 1 threads, median of 2 runs)"), std::string::npos) << text;
  EXPECT_NE(text.find("kernels run again"), std::string::npos) << text;
}

// --balance needs two threads or more; at two, --json has a "balance" member whose kernels are
// the profile's, each with a busy time per thread, and the text form has its section.
TEST(ProfileCli, BalanceSplitsEachKernelsTimeAcrossTheThreads) {
  if (!fs::exists(fs::path(KILN_BINARY_DIR) / "bin" / "kiln")) GTEST_SKIP() << "kiln CLI not built";
  std::string digits = std::string(KILN_SOURCE_DIR) + "/build/zoo/digits_cnn/model.onnx";
  if (!fs::exists(digits)) GTEST_SKIP() << "zoo not prepared";
  auto [rc0, err] = run_cli(digits + " --threads 1 --balance");
  EXPECT_NE(rc0, 0);
  EXPECT_NE(err.find("--balance splits each kernel's time across its threads: give --threads 2 or more"),
            std::string::npos)
      << err;
  auto [rc, out] = run_cli(digits + " --batch 4 --threads 2 --runs 3 --warmup 1 --balance --json");
  ASSERT_EQ(rc, 0) << out;
  json::Value j = json::parse(out.substr(out.find('{')), "profile json");
  const json::Value* b = j.find("balance");
  ASSERT_TRUE(b && b->find("kernels")) << out;
  EXPECT_EQ(b->find("threads")->as_int("threads"), 2);
  const auto& ks = b->find("kernels")->as_array("kernels");
  EXPECT_EQ(ks.size(), j.find("kernels")->as_array("kernels").size());
  for (const auto& k : ks) {
    const auto& busy = k.find("busy_ms")->as_array("busy_ms");
    ASSERT_EQ(busy.size(), 2u);
    for (const auto& x : busy) EXPECT_LE(x.as_double("busy"), k.find("ms")->as_double("ms") + 1e-9);
  }
  auto [rc2, text] = run_cli(digits + " --batch 4 --threads 2 --runs 2 --warmup 0 --balance");
  ASSERT_EQ(rc2, 0) << text;
  EXPECT_NE(text.find("threads (--balance, 2 threads, median of 2 runs)"), std::string::npos) << text;
  EXPECT_NE(text.find("busy ms per thread"), std::string::npos) << text;
}

}  // namespace
}  // namespace kiln::analysis
