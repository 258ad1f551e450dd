// Op-level conformance: kiln's reference kernels against ONNX Runtime, op by op.
//
// The cases (single-node models, inputs, ORT outputs) are generated at test time by the
// ctest fixture conformance.prepare (scripts/conformance/prepare.sh) into
// ${CMAKE_BINARY_DIR}/conformance, or the directory in $KILN_CONFORMANCE_DIR. There is one
// test per op in src/ops/op_list.inc (so ctest lists ops even before cases exist); it runs
// every case of that op and reports each failing case by name. Tolerance: float outputs
// must satisfy |kiln - ort| <= atol + rtol*|ort| elementwise with atol 1e-5, rtol 1e-4 by
// default (atol 1e-4 for accumulating ops; per case in meta.txt; f16 outputs get rtol 2^-10);
// integer and bool outputs must be equal; dtypes and shapes must be equal.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "conformance/case_runner.h"
#include "kiln/ir/error.h"

namespace kiln::conformance {
namespace {
namespace fs = std::filesystem;

#define KILN_OP(Name) #Name,
const std::vector<std::string> kListedOps = {
#include "ops/op_list.inc"
};
#undef KILN_OP

fs::path cases_root() {
  if (const char* env = std::getenv("KILN_CONFORMANCE_DIR"); env && *env) return env;
  return fs::path(KILN_BINARY_DIR) / "conformance";
}

std::string missing_cases_hint() {
  return str_cat("no conformance cases in ", cases_root().string(),
                 "; generate them with: bash " KILN_SOURCE_DIR "/scripts/conformance/prepare.sh ",
                 cases_root().string(), " (ctest runs this as conformance.prepare)");
}

// Case directories grouped by op, read once per process.
struct CaseIndex {
  std::map<std::string, std::vector<std::pair<fs::path, CaseMeta>>> by_op;
  std::vector<std::string> errors;  // unreadable meta.txt
  size_t count = 0;
};

const CaseIndex& index() {
  static const CaseIndex idx = [] {
    CaseIndex ix;
    std::error_code ec;
    if (!fs::is_directory(cases_root(), ec)) return ix;
    std::vector<fs::path> dirs;
    for (const auto& e : fs::directory_iterator(cases_root()))
      if (e.is_directory()) dirs.push_back(e.path());
    std::sort(dirs.begin(), dirs.end());
    for (const auto& d : dirs) {
      try {
        CaseMeta m = read_meta(d);
        ix.by_op[m.op].emplace_back(d, m);
        ++ix.count;
      } catch (const std::exception& e) {
        ix.errors.push_back(e.what());
      }
    }
    return ix;
  }();
  return idx;
}

// Lines of a text file the generators write ("Op: reason" / "Case: error"); empty if absent.
std::vector<std::string> read_lines(const fs::path& p) {
  std::vector<std::string> lines;
  std::ifstream in(p);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) lines.push_back(line);
  return lines;
}

// Results of this process, printed once at exit.
struct Summary {
  int passed = 0;
  std::vector<std::string> failed;  // "case [op Op, opset N]: first problem"
};
Summary& summary() {
  static Summary s;
  return s;
}

class SummaryPrinter : public ::testing::Environment {
 public:
  void TearDown() override {
    const Summary& s = summary();
    if (s.passed == 0 && s.failed.empty()) return;  // no case ran (e.g. only listing tests)
    std::printf("conformance: %d passed, %zu failed\n", s.passed, s.failed.size());
    for (const auto& f : s.failed) std::printf("  FAILED %s\n", f.c_str());
  }
};
[[maybe_unused]] ::testing::Environment* const kSummary = ::testing::AddGlobalTestEnvironment(new SummaryPrinter);

class OpConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(OpConformance, MatchesOnnxRuntime) {
  const std::string& op = GetParam();
  const CaseIndex& ix = index();
  ASSERT_GT(ix.count, 0u) << missing_cases_hint();
  auto it = ix.by_op.find(op);
  if (it == ix.by_op.end()) {
    for (const auto& line : read_lines(cases_root() / "no_case.txt"))
      if (line.rfind(op + ":", 0) == 0) GTEST_SKIP() << "no conformance case: " << line;
    FAIL() << "op " << op << " has no conformance case and no reason in no_case.txt "
           << "(scripts/conformance/make_cases.py, or ORT rejected all its cases: see ort_rejected.txt)";
  }
  for (const auto& [dir, meta] : it->second) {
    const std::string label = str_cat(dir.filename().string(), " [op ", op, ", opset ", meta.opset, "]");
    std::vector<std::string> problems = run_case(dir, meta);
    if (problems.empty()) {
      ++summary().passed;
      continue;
    }
    summary().failed.push_back(label + ": " + problems.front());
    for (const auto& p : problems) ADD_FAILURE() << label << ": " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OpConformance, ::testing::ValuesIn(kListedOps),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

// Every case belongs to an op kiln lists (a typo would otherwise silently never run) and
// has a readable meta.txt.
TEST(ConformanceCases, EveryCaseNamesAListedOp) {
  const CaseIndex& ix = index();
  ASSERT_GT(ix.count, 0u) << missing_cases_hint();
  for (const auto& e : ix.errors) ADD_FAILURE() << e;
  std::set<std::string> listed(kListedOps.begin(), kListedOps.end());
  for (const auto& [op, cases] : ix.by_op)
    EXPECT_TRUE(listed.count(op)) << cases.front().first.filename().string() << " tests op " << op
                                  << ", which src/ops/op_list.inc does not list";
}

// ORT refusing a generated model means the generator wrote an invalid case; such cases are
// dropped by ort_cases.js and must be fixed in make_cases.py rather than left to pile up.
TEST(ConformanceCases, OnnxRuntimeAcceptedEveryCase) {
  ASSERT_GT(index().count, 0u) << missing_cases_hint();
  for (const auto& line : read_lines(cases_root() / "ort_rejected.txt")) ADD_FAILURE() << "ORT rejected " << line;
}

}  // namespace
}  // namespace kiln::conformance
