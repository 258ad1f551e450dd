// The kernel library builder: content-hash cache (a warm build starts no process), dump
// directory, concurrent builds of one library, and one-line errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "codegen/codegen_test_util.h"

namespace kiln::codegen::test {
namespace {

namespace fs = std::filesystem;

GeneratedKernel add_kernel() {
  static const Model m = fused_model({"f32[N,5]", "f32[5]"}, "    %r0 = Add(%x0, %x1)");
  return emit_fused_kernel(fused_node(m));
}

// The library at `path` computes x + b for the add_kernel() body.
void expect_adds(const std::string& path, const std::string& symbol) {
  LoadedLibrary lib(path);
  Tensor x = Tensor::from_vector<float>({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor b = Tensor::from_vector<float>({5}, {0.5f, -1, 100, 0, 2});
  std::vector<Tensor> y = call_kernel(lib.kernel(symbol), {x, b}, {DType::f32});
  const std::vector<float> want = {1.5f, 1, 103, 4, 7, 6.5f, 6, 108, 9, 12};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(y[0].data<float>()[i], want[i]) << i;
}

std::string error_of(const std::vector<GeneratedKernel>& kernels, const BuildOptions& opt) {
  try {
    build_kernel_library(kernels, opt);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(KernelBuild, SecondBuildHitsTheCacheWithoutRunningTheCompiler) {
  BuildOptions opt;
  opt.cache_dir = fresh_dir("cache-hit");
  opt.target_isa = "scalar";
  const GeneratedKernel k = add_kernel();
  const KernelLibrary cold = build_kernel_library({k}, opt);
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_EQ(cold.compiler_runs, 2);  // `--version` once for this cache, then the compile
  EXPECT_GT(cold.compile_seconds, 0);
  EXPECT_EQ(cold.key.size(), 64u);
  EXPECT_TRUE(fs::exists(cold.path));
  expect_adds(cold.path, k.symbol);

  const KernelLibrary warm = build_kernel_library({k}, opt);
  EXPECT_TRUE(warm.cache_hit);
  EXPECT_EQ(warm.compiler_runs, 0);
  EXPECT_EQ(warm.path, cold.path);
  EXPECT_EQ(warm.key, cold.key);

  // Another ISA is another key; the compiler's version is memoised already.
  opt.target_isa = __builtin_cpu_supports("avx2") ? "avx2" : "scalar";
  const KernelLibrary other = build_kernel_library({k, k}, opt);  // duplicates collapse
  EXPECT_EQ(other.cache_hit, opt.target_isa == "scalar");
  EXPECT_EQ(other.compiler_runs, opt.target_isa == "scalar" ? 0 : 1);
  expect_adds(other.path, k.symbol);
  // No build directories are left behind.
  for (const auto& e : fs::directory_iterator(opt.cache_dir))
    EXPECT_EQ(e.path().filename().string().rfind("tmp-", 0), std::string::npos) << e.path();
}

TEST(KernelBuild, ChangedSourceIsANewLibrary) {
  BuildOptions opt;
  opt.cache_dir = fresh_dir("cache-change");
  opt.target_isa = "scalar";
  const Model m = fused_model({"f32[N,5]", "f32[5]"}, "    %r0 = Sub(%x0, %x1)");
  const KernelLibrary a = build_kernel_library({add_kernel()}, opt);
  const KernelLibrary b = build_kernel_library({add_kernel(), emit_fused_kernel(fused_node(m))}, opt);
  EXPECT_NE(a.key, b.key);
  EXPECT_FALSE(b.cache_hit);
  EXPECT_EQ(b.compiler_runs, 1);
}

TEST(KernelBuild, DumpDirHoldsTheSourceAndTheLibrary) {
  BuildOptions opt;
  opt.cache_dir = test_cache_dir();
  opt.target_isa = "scalar";
  opt.dump_dir = fresh_dir("dump") + "/kernels";
  const GeneratedKernel k = add_kernel();
  build_kernel_library({k}, opt);
  std::ifstream in(opt.dump_dir + "/kernels.cpp");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(str_cat("extern \"C\" void ", k.symbol, "(")), std::string::npos);
  EXPECT_NE(text.find("KILN_INLINE float kiln_exp(float x)"), std::string::npos);  // the prelude
  EXPECT_NE(text.find("// in0 f32[N,5], in1 f32[5] -> out0 f32"), std::string::npos);  // what it computes
  expect_adds(opt.dump_dir + "/kernels.so", k.symbol);
}

TEST(KernelBuild, ConcurrentBuildsOfOneLibraryBothSucceed) {
  BuildOptions opt;
  opt.cache_dir = fresh_dir("cache-race");
  opt.target_isa = "scalar";
  const GeneratedKernel k = add_kernel();
  KernelLibrary r1, r2;
  std::thread t1([&] { r1 = build_kernel_library({k}, opt); });
  std::thread t2([&] { r2 = build_kernel_library({k}, opt); });
  t1.join();
  t2.join();
  EXPECT_EQ(r1.path, r2.path);
  expect_adds(r1.path, k.symbol);
  for (const auto& e : fs::directory_iterator(opt.cache_dir))
    EXPECT_EQ(e.path().filename().string().rfind("tmp-", 0), std::string::npos) << e.path();
}

TEST(KernelBuild, MissingCompilerIsOneLine) {
  BuildOptions opt;
  opt.cache_dir = fresh_dir("cache-nocc");
  opt.compiler = "kiln-no-such-compiler";
  const std::string e = error_of({add_kernel()}, opt);
  EXPECT_NE(e.find("C++ compiler 'kiln-no-such-compiler' not found"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
}

TEST(KernelBuild, CompileFailureShowsTheErrorAndKeepsTheSource) {
  BuildOptions opt;
  opt.cache_dir = fresh_dir("cache-fail");
  opt.target_isa = "scalar";
  const std::string e = error_of({{"broken", "extern \"C\" void broken(int x) { return x + undeclared_name; }\n"}}, opt);
  EXPECT_NE(e.find("generated kernels failed to compile:"), std::string::npos) << e;
  EXPECT_NE(e.find("undeclared_name"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  const size_t at = e.find("source kept at ");
  ASSERT_NE(at, std::string::npos) << e;
  const std::string kept = e.substr(at + 15, e.size() - at - 16);
  EXPECT_TRUE(fs::exists(kept)) << kept;
}

TEST(KernelBuild, UnwritableCacheDirIsOneLine) {
  const std::string dir = fresh_dir("cache-file");
  const std::string file = dir + "/not-a-directory";
  std::ofstream(file) << "x";
  BuildOptions opt;
  opt.cache_dir = file + "/cache";
  const std::string e = error_of({add_kernel()}, opt);
  EXPECT_NE(e.find("cannot create kernel cache directory"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  if (::geteuid() != 0) {  // root writes anywhere
    const std::string ro = fresh_dir("cache-readonly");
    fs::permissions(ro, fs::perms::owner_read | fs::perms::owner_exec);
    opt.cache_dir = ro;
    EXPECT_NE(error_of({add_kernel()}, opt).find("is not writable"), std::string::npos);
    fs::permissions(ro, fs::perms::owner_all);
  }
}

TEST(KernelBuild, BadOptionsAndClashingKernels) {
  BuildOptions opt;
  EXPECT_NE(error_of({add_kernel()}, opt).find("no kernel cache directory"), std::string::npos);
  opt.cache_dir = test_cache_dir();
  opt.target_isa = "sse9";
  EXPECT_NE(error_of({add_kernel()}, opt).find("unknown target ISA 'sse9'"), std::string::npos);
  opt.target_isa = "scalar";
  EXPECT_NE(error_of({{"k", "int a;"}, {"k", "int b;"}}, opt).find("both named k"), std::string::npos);
}

TEST(KernelBuild, FlagsFollowTheTargetIsa) {
  auto has = [](const std::vector<std::string>& f, const std::string& x) {
    return std::find(f.begin(), f.end(), x) != f.end();
  };
  EXPECT_TRUE(has(compile_flags("avx512"), "-mavx512f") && has(compile_flags("avx512"), "-mfma"));
  EXPECT_TRUE(has(compile_flags("avx2"), "-mavx2") && !has(compile_flags("avx2"), "-mavx512f"));
  EXPECT_FALSE(has(compile_flags("scalar"), "-mfma"));
  for (const char* isa : {"avx512", "avx2", "scalar"}) {
    EXPECT_TRUE(has(compile_flags(isa), "-O3") && has(compile_flags(isa), "-fPIC") && has(compile_flags(isa), "-shared"));
    EXPECT_TRUE(has(compile_flags(isa), "-fno-math-errno"));
  }
}

}  // namespace
}  // namespace kiln::codegen::test
