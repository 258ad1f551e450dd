// PassRegistry and PassManager: names, levels, pipeline text, verifier between passes,
// dumps, records, fixed points.
#include <fstream>
#include <sstream>

#include "pass_test_util.h"

namespace kiln::passes::test {
namespace {

const char* kSmall = R"(
graph g(%x: f32[2]) -> (%y) {
  %a = init f32[2] dense<1.0, 2.0>
  %b = init f32[2] dense<3.0, 4.0>
  %s = Add(%a, %b)
  %i = Identity(%x)
  %dead = Neg(%x)
  %y = Mul(%i, %s)
})";

TEST(PassRegistry, ListsTheBuiltInPassesInOrderAndRejectsUnknownAndDuplicateNames) {
  auto names = PassRegistry::global().names();
  std::vector<std::string> first(names.begin(), names.begin() + 6);
  EXPECT_EQ(first, (std::vector<std::string>{"fold-constants", "simplify-shapes", "eliminate-identity", "cse", "dce",
                                             "fold-batchnorm"}));
  for (const auto& n : names) {
    auto p = PassRegistry::global().create(n);
    EXPECT_EQ(p->name(), n);
    EXPECT_FALSE(p->summary().empty()) << n;
  }
  std::string err = error_of([] { PassRegistry::global().create("fold-everything"); });
  EXPECT_NE(err.find("unknown pass 'fold-everything' (known passes: fold-constants, simplify-shapes"),
            std::string::npos)
      << err;
  PassRegistry r;
  r.add("x", [] { return PassRegistry::global().create("dce"); });
  err = error_of([&] { r.add("x", [] { return PassRegistry::global().create("dce"); }); });
  EXPECT_NE(err.find("a pass named 'x' is already registered"), std::string::npos) << err;
}

TEST(Pipelines, LevelsAreDataAndSkipPassesNotBuiltIn) {
  EXPECT_TRUE(pipeline_for_level(0).empty());
  std::vector<std::string> o1 = {"fold-constants", "simplify-shapes", "eliminate-identity", "cse", "dce"};
  EXPECT_EQ(pipeline_for_level(1), o1);
  // -O2 and -O3 name the fusion passes; those not registered are skipped with one note each.
  PassRegistry only_cleanup;
  for (const auto& n : o1) only_cleanup.add(n, [n] { return PassRegistry::global().create(n); });
  std::vector<std::string> notes;
  auto o3 = pipeline_for_level(3, only_cleanup, &notes);
  EXPECT_EQ(o3, (std::vector<std::string>{"fold-constants", "simplify-shapes", "eliminate-identity", "cse", "dce",
                                          "dce"}));
  // fold-batchnorm, fold-qdq, fold-qdq-lookup, 4 fusions, fold-attention-views, layout
  ASSERT_EQ(notes.size(), 9u);
  EXPECT_EQ(notes[0], "-O3: pass 'fold-batchnorm' is not built into this kiln; skipped");
  EXPECT_NE(notes[5].find("'fold-attention-views'"), std::string::npos);
  EXPECT_NE(notes[8].find("'layout'"), std::string::npos);
  EXPECT_NE(error_of([] { pipeline_for_level(4); }).find("level 4 does not exist"), std::string::npos);
}

TEST(Pipelines, TextAndOptions) {
  auto steps = parse_pipeline(" cse, dce* ,fold-constants");
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_EQ(steps[1].pass, "dce");
  EXPECT_TRUE(steps[1].to_fixed_point);
  EXPECT_FALSE(steps[0].to_fixed_point);
  EXPECT_NE(error_of([] { parse_pipeline("cse,,dce"); }).find("empty pass name"), std::string::npos);

  PipelineOptions opt;
  opt.passes = "cse,fuse-everything";
  std::string err = error_of([&] { PassManager::from_options(opt); });
  EXPECT_NE(err.find("--passes: unknown pass 'fuse-everything' (known passes: fold-constants"), std::string::npos)
      << err;
  opt.passes = "";
  opt.disabled = {"nope"};
  EXPECT_NE(error_of([&] { PassManager::from_options(opt); }).find("--disable-pass: unknown pass 'nope'"),
            std::string::npos);
  opt.disabled = {"cse", "simplify-shapes"};
  EXPECT_EQ(PassManager::from_options(opt).pass_names(),
            (std::vector<std::string>{"fold-constants", "eliminate-identity", "dce"}));
  opt.passes = "dce,cse";
  EXPECT_EQ(PassManager::from_options(opt).pass_names(), (std::vector<std::string>{"dce"}));
}

TEST(PassManager, RecordsWhatEachPassDidAndDumpsTheIr) {
  Model m = parse_verified(kSmall);
  PipelineOptions opt;
  opt.opt_level = 1;
  opt.dump_dir = std::string(KILN_BINARY_DIR) + "/passes/dump_test";
  std::filesystem::remove_all(opt.dump_dir);
  std::ostringstream printed;
  opt.print_after_all = &printed;
  PassContext ctx;
  auto records = PassManager::from_options(opt).run(m, ctx);
  ASSERT_EQ(records.size(), 5u);
  EXPECT_EQ(records[0].pass, "fold-constants");
  EXPECT_TRUE(records[0].changed);
  EXPECT_EQ(records[0].nodes_before, 4u);
  EXPECT_EQ(records[0].nodes_after, 3u);
  EXPECT_FALSE(records[1].changed);  // simplify-shapes: no shapes computed here
  EXPECT_TRUE(records[2].changed);   // eliminate-identity
  EXPECT_EQ(records[4].nodes_after, 1u);
  EXPECT_EQ(show(m), canonical(R"(
graph g(%x: f32[2]) -> (%y) {
  %s = init f32[2] dense<4.0, 6.0>
  %y = Mul(%x, %s)
})"));
  EXPECT_NE(printed.str().find("// ---- after simplify-shapes (unchanged) ----"), std::string::npos);
  for (const char* f : {"00-input.kir", "01-fold-constants.kir", "03-eliminate-identity.kir", "05-dce.kir"}) {
    std::ifstream in(opt.dump_dir + "/" + f);
    ASSERT_TRUE(in.good()) << f;
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NO_THROW(parse_model(ss.str())) << f;
  }
  std::string table = format_pass_table(records);
  EXPECT_NE(table.find("fold-constants       yes"), std::string::npos) << table;
  EXPECT_NE(table.find("4 -> 1"), std::string::npos) << table;
}

// A pass that breaks the graph on purpose, to see the verifier name it.
class Breaker : public Pass {
 public:
  explicit Breaker(int how) : how_(how) {}
  std::string_view name() const override { return how_ == 0 ? "breaker" : "liar"; }
  std::string_view summary() const override { return "test pass"; }
  bool run(Model& m, PassContext&) override {
    Node* n = m.graph->mutable_nodes().back().get();
    if (how_ == 0) n->inputs.push_back(n->outputs[0]);  // reads its own output
    else n->outputs[0]->shape = Shape({7});             // claims a shape inference disagrees with
    return true;
  }

 private:
  int how_;
};

TEST(PassManager, TheVerifierNamesThePassThatBrokeTheGraph) {
  for (int how : {0, 1}) {
    Model m = parse_verified("graph g(%x: f32[2]) -> (%y) {\n %y = Relu(%x)\n}");
    PassManager pm;
    pm.add(std::make_unique<Breaker>(how));
    PassContext ctx;
    std::string err = error_of([&] { pm.run(m, ctx); });
    EXPECT_EQ(err.rfind(how == 0 ? "after pass 'breaker': invalid model" : "after pass 'liar': value 'y' has shape [7]",
                        0),
              0u)
        << err;
  }
}

// Changes the graph on its first `n` runs.
class Countdown : public Pass {
 public:
  explicit Countdown(int n) : left_(n) {}
  std::string_view name() const override { return "countdown"; }
  std::string_view summary() const override { return "test pass"; }
  bool run(Model&, PassContext&) override { return left_-- > 0; }

 private:
  int left_;
};

TEST(PassManager, FixedPointStepsRepeatUntilNothingChangesWithACap) {
  Model m = parse_verified("graph g(%x: f32[2]) -> (%y) {\n %y = Relu(%x)\n}");
  PassManager pm;
  pm.add(std::make_unique<Countdown>(3), /*to_fixed_point=*/true);
  pm.add(std::make_unique<Countdown>(100), /*to_fixed_point=*/true);
  pm.add(std::make_unique<Countdown>(5));
  PassContext ctx;
  auto r = pm.run(m, ctx);
  EXPECT_EQ(r[0].rounds, 4);  // three changes, then one run that finds nothing
  EXPECT_EQ(r[1].rounds, kMaxFixedPointRounds);
  EXPECT_EQ(r[2].rounds, 1);
}

}  // namespace
}  // namespace kiln::passes::test
