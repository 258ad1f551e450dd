// The artifact file: round trip, mmapped weights, and one-line refusals of truncated, corrupt,
// wrong-version and wrong-ISA files; an interrupted write leaves the previous artifact alone.
#include <sys/resource.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "kiln/runtime/executable.h"
#include "runtime_test_util.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::ScratchDir;

const char* kModel = R"(
kiln.model ir=8 opset=17
graph main(%x: f32[N,4]) -> (%y) {
  %w = init f32[4] dense<0.5, -1.0, 2.0, 0.25>
  %k = init i64[2] dense<-1, 2>
  %a = Mul(%x, %w) : f32[N,4]
  %c = Constant() {value=f32[4] dense<1.0, 2.0, 3.0, 4.0>} : f32[4]
  %b = Add(%a, %c) : f32[N,4]
  %r = Reshape(%b, %k) : f32[?,2]
  %y = Relu(%r)
}
)";

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

Tensor test_input() { return Tensor::from_vector<float>({2, 4}, {1, 2, 3, 4, -1, -2, -3, -4}); }

TEST(Artifact, RoundTripKeepsGraphWeightsAndManifest) {
  ScratchDir dir("artifact_roundtrip");
  Model m = testing::model_from_text(kModel);
  ArtifactManifest man = testing::test_manifest({{"N", "1..8"}});
  man.source_sha256 = sha256_hex("abc", 3);
  write_artifact(dir.file("m.kiln"), man, m, {}, "{\"plan\": 1}\n");
  EXPECT_TRUE(is_artifact_file(dir.file("m.kiln")));

  LoadedArtifact a = read_artifact(dir.file("m.kiln"));
  EXPECT_EQ(a.manifest.kiln_version, std::string(kiln_version()));
  EXPECT_EQ(a.manifest.format_version, kArtifactFormatVersion);
  EXPECT_EQ(a.manifest.source_sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(a.manifest.dims.at("N"), "1..8");
  EXPECT_EQ(a.manifest.passes, std::vector<std::string>{"none"});
  EXPECT_EQ(a.plan_json, "{\"plan\": 1}\n");
  EXPECT_TRUE(a.kernel_library.empty());
  for (const ArtifactSection& s : a.sections) EXPECT_EQ(s.offset % 4096, 0u) << s.name;
  // Weights point into the mapped file: no copy.
  const Tensor& w = *a.model.graph->find("w")->initializer;
  EXPECT_EQ(w.storage(), a.file);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(w.raw()) % 64, 0u);
  EXPECT_EQ(w.data<float>()[1], -1.0f);
  EXPECT_EQ(a.model.graph->find("k")->initializer->data<int64_t>()[0], -1);
  // Tensor attributes are stored the same way.
  const Node& constant = *a.model.graph->nodes()[1];
  EXPECT_EQ(constant.attrs.at("value").t().data<float>()[3], 4.0f);
  // Same graph text as the source.
  PrintOptions po;
  EXPECT_EQ(print_model(a.model, po).substr(print_model(a.model, po).find("graph")),
            print_model(m, po).substr(print_model(m, po).find("graph")));
}

TEST(Artifact, CopiedWeightsLeaveTheFileAndKeepTheirValues) {
  ScratchDir dir("artifact_copied");
  Model m = testing::model_from_text(kModel);
  write_artifact(dir.file("m.kiln"), testing::test_manifest(), m);
  LoadedArtifact mapped = read_artifact(dir.file("m.kiln"), true, WeightMemory::mapped);
  LoadedArtifact copied = read_artifact(dir.file("m.kiln"), true, WeightMemory::copied);
  EXPECT_EQ(mapped.weights, nullptr);
  ASSERT_NE(copied.weights, nullptr);
  for (const char* name : {"w", "k"}) {
    const Tensor& a = *mapped.model.graph->find(name)->initializer;
    const Tensor& b = *copied.model.graph->find(name)->initializer;
    EXPECT_EQ(a.storage(), mapped.file) << name;
    EXPECT_EQ(b.storage(), copied.weights) << name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.raw()) % 64, 0u) << name;
    ASSERT_EQ(a.nbytes(), b.nbytes()) << name;
    EXPECT_EQ(std::memcmp(a.raw(), b.raw(), a.nbytes()), 0) << name;
  }
  EXPECT_EQ(copied.model.graph->nodes()[1]->attrs.at("value").t().data<float>()[3], 4.0f);
  // The loaded executable runs on the copy and answers as the source graph does.
  ::setenv("KILN_MMAP_WEIGHTS", "1", 1);
  EXPECT_EQ(weight_memory_to_run(), WeightMemory::mapped);
  ::unsetenv("KILN_MMAP_WEIGHTS");
  EXPECT_EQ(weight_memory_to_run(), WeightMemory::copied);
  const Tensor want = run_model(m, {{"x", test_input()}}).at("y");
  EXPECT_TRUE(testing::bit_equal(Executable::load(dir.file("m.kiln"))->run({{"x", test_input()}}).at("y"), want));
}

TEST(Artifact, LargeBuffersAreHugePageAlignedAndZeroed) {
  auto big = make_large_buffer((size_t{5} << 20) + 3);
  EXPECT_EQ(big->size(), (size_t{5} << 20) + 3);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(big->data()) % (size_t{2} << 20), 0u);
  const auto* bytes = static_cast<const unsigned char*>(big->data());
  for (size_t i : {size_t{0}, size_t{1} << 20, (size_t{5} << 20) + 2}) EXPECT_EQ(bytes[i], 0) << i;
  auto small = make_large_buffer(1000);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(small->data()) % 64, 0u);
  EXPECT_EQ(static_cast<const unsigned char*>(small->data())[999], 0);
}

// AnonHugePages of the /proc/self/smaps mapping that holds `p`, in bytes (-1: no mapping does).
long long huge_page_bytes_at(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto addr = reinterpret_cast<uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    unsigned long long lo = 0, hi = 0;
    if (std::sscanf(line.c_str(), "%llx-%llx ", &lo, &hi) == 2 && line.find(':') > line.find(' ')) {
      inside = addr >= lo && addr < hi;
    } else if (inside && line.rfind("AnonHugePages:", 0) == 0) {
      return std::atoll(line.c_str() + 14) * 1024;
    }
  }
  return -1;
}

// Transparent huge pages available to memory that asks for them ("always" or "madvise").
bool transparent_huge_pages_on() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string s;
  std::getline(f, s);
  return s.find("[always]") != std::string::npos || s.find("[madvise]") != std::string::npos;
}

// A large buffer is a mapping of its own, never heap memory glibc hands back: after an
// in-process compile the heap held a freed, already touched gigabyte, and the weights copied
// into it stayed in 4 KiB pages (bert_base's GEMMs up to 2x slower on the Zen 5 host).
TEST(Artifact, LargeBuffersGetHugePagesEvenWhenTheHeapHasRoom) {
  if (!transparent_huge_pages_on()) GTEST_SKIP() << "transparent huge pages are off on this machine";
  // The heap as a compile leaves it: glibc's mmap threshold raised by a freed 30 MiB block, then
  // 1 MiB blocks (now from the heap) touched and freed under a block still live, so the heap has
  // a free, already touched 128 MiB that a 32 MiB aligned_alloc is served from.
  void* volatile raise_threshold = std::malloc(size_t{30} << 20);
  std::free(raise_threshold);
  std::vector<void*> blocks;
  for (int i = 0; i < 128; ++i) std::memset(blocks.emplace_back(std::malloc(size_t{1} << 20)), 1, size_t{1} << 20);
  void* volatile pin = std::malloc(size_t{1} << 20);
  std::memset(pin, 1, size_t{1} << 20);
  for (void* b : blocks) std::free(b);
  constexpr size_t kBytes = size_t{32} << 20;
  auto big = make_large_buffer(kBytes, false);
  std::memset(big->data(), 2, kBytes);
  const long long huge = huge_page_bytes_at(big->data());
  ASSERT_GE(huge, 0) << "no mapping holds the buffer";
  // All of it unless the kernel is short of free 2 MiB pages; half is a margin for that.
  EXPECT_GE(huge, static_cast<long long>(kBytes / 2)) << huge << " of " << kBytes << " bytes in huge pages";
  std::free(pin);
}

TEST(Artifact, RefusesNonArtifactsAndTruncatedFiles) {
  ScratchDir dir("artifact_truncated");
  Model m = testing::model_from_text(kModel);
  const std::string path = dir.file("m.kiln");
  write_artifact(path, testing::test_manifest(), m);
  const std::string good = read_file(path);
  EXPECT_NE(error_of([&] { read_artifact(dir.file("missing.kiln")); }).find("cannot open"), std::string::npos);
  for (size_t len : {size_t{0}, size_t{5}, size_t{63}, size_t{100}, size_t{4096}, good.size() / 2, good.size() - 1}) {
    write_file(path, good.substr(0, len));
    std::string e = error_of([&] { Executable::load(path); });
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    EXPECT_EQ(e.rfind(path, 0), 0u) << e;
    EXPECT_TRUE(e.find("truncated") != std::string::npos || e.find("not a kiln artifact") != std::string::npos)
        << len << ": " << e;
  }
  write_file(path, "kiln.model ir=8\n");
  EXPECT_NE(error_of([&] { Executable::load(path); }).find("not a kiln artifact"), std::string::npos);
  EXPECT_FALSE(is_artifact_file(path));
}

TEST(Artifact, FlippedBytesAreCaughtOrHarmless) {
  ScratchDir dir("artifact_flipped");
  Model m = testing::model_from_text(kModel);
  const std::string path = dir.file("m.kiln");
  write_artifact(path, testing::test_manifest(), m, {}, "{}");
  const std::string good = read_file(path);
  const Tensor want = run_model(m, {{"x", test_input()}}).at("y");
  LoadedArtifact a = read_artifact(path);

  // Every byte of the header, the section table and each section is covered by a checksum.
  std::vector<size_t> must_fail = {0, 7, 8, 12, 20, 30, 40, 47, 63, 64, 100, 64 * 5 + 40};
  for (const ArtifactSection& s : a.sections)
    if (s.size > 0) must_fail.insert(must_fail.end(), {s.offset, s.offset + s.size / 2, s.offset + s.size - 1});
  for (size_t pos : must_fail) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x20);
    write_file(path, bad);
    std::string e = error_of([&] { Executable::load(path); });
    EXPECT_NE(e, "(no error)") << "flip at " << pos;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  // Anywhere else (padding between sections) a flip is either caught or changes nothing.
  int caught = 0, harmless = 0;
  for (size_t pos = 0; pos < good.size(); pos += 97) {
    std::string bad = good;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x01);
    write_file(path, bad);
    try {
      auto exe = Executable::load(path);
      EXPECT_TRUE(testing::bit_equal(exe->run({{"x", test_input()}}).at("y"), want)) << "flip at " << pos;
      ++harmless;
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++caught;
    }
  }
  EXPECT_GT(caught, 0);
  EXPECT_GT(harmless, 0);
}

TEST(Artifact, RefusesOtherFormatVersions) {
  ScratchDir dir("artifact_version");
  Model m = testing::model_from_text(kModel);
  const std::string path = dir.file("m.kiln");
  write_artifact(path, testing::test_manifest(), m);
  std::string bytes = read_file(path);
  const int64_t next = kArtifactFormatVersion + 1;
  bytes[8] = static_cast<char>(next);
  write_file(path, bytes);
  std::string e = error_of([&] { Executable::load(path); });
  EXPECT_EQ(e, path + ": artifact format version " + std::to_string(next) + ", but this kiln (" +
                   std::string(kiln_version()) + ") reads version " + std::to_string(kArtifactFormatVersion) +
                   "; compile the model again with this kiln");
  bytes[8] = 2;  // before If branches were lowered
  write_file(path, bytes);
  EXPECT_NE(error_of([&] { Executable::load(path); }).find("artifact format version 2"), std::string::npos);
  ArtifactManifest future = testing::test_manifest();
  future.format_version = next;
  EXPECT_NE(error_of([&] { write_artifact(path, future, m); }).find("cannot write format version " + std::to_string(next)),
            std::string::npos);
}

TEST(Artifact, RefusesAnotherIsa) {
  EXPECT_EQ(error_of([] { check_artifact_isa("m.kiln", "avx512", "avx2"); }),
            "m.kiln: built for avx512, but this CPU supports only avx2; compile the model on (or for) this machine");
  EXPECT_EQ(error_of([] { check_artifact_isa("m.kiln", "avx2", "scalar"); }).find("built for avx2"), 8u);
  EXPECT_EQ(error_of([] { check_artifact_isa("m.kiln", "avx2", "avx512"); }), "(no error)");
  EXPECT_EQ(error_of([] { check_artifact_isa("m.kiln", "scalar", "scalar"); }), "(no error)");

  ScratchDir dir("artifact_isa");
  Model m = testing::model_from_text(kModel);
  ArtifactManifest man = testing::test_manifest();
  man.target_isa = "sse9";
  EXPECT_NE(error_of([&] { write_artifact(dir.file("m.kiln"), man, m); }).find("unknown target ISA 'sse9'"),
            std::string::npos);
  // An artifact for this machine's own ISA loads.
  man.target_isa = std::string(host_isa());
  write_artifact(dir.file("m.kiln"), man, m);
  EXPECT_EQ(Executable::load(dir.file("m.kiln"))->manifest().target_isa, host_isa());
}

TEST(Artifact, FailedWriteLeavesTheOldArtifact) {
  ScratchDir dir("artifact_atomic");
  const std::string path = dir.file("m.kiln");
  Model small = testing::model_from_text(kModel);
  write_artifact(path, testing::test_manifest(), small);
  const std::string before = read_file(path);

  // A model with 1 MiB of weights, written under a 64 KiB file size limit: write() fails (EFBIG)
  // as it would on a full disk.
  Model big = testing::model_from_text(kModel);
  Graph& g = *big.graph;
  g.find("w")->initializer = Tensor(DType::f32, {4});
  g.add_initializer("unused", Tensor(DType::f32, {1 << 18}));
  struct rlimit old {};
  getrlimit(RLIMIT_FSIZE, &old);
  auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit lim = old;
  lim.rlim_cur = 64 * 1024;
  ASSERT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  std::string e = error_of([&] { write_artifact(path, testing::test_manifest(), big); });
  setrlimit(RLIMIT_FSIZE, &old);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_EQ(e, path + ": cannot write: File too large");
  EXPECT_EQ(read_file(path), before);
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) files += entry.is_regular_file();
  EXPECT_EQ(files, 1);  // the temporary file is gone
  EXPECT_NE(error_of([&] { write_artifact(dir.file("no/such/dir/m.kiln"), testing::test_manifest(), small); })
                .find("cannot create a temporary file"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln
