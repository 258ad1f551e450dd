// Helpers for the fusion pass tests: run a pass on textual IR and compare with the expected
// text (structure only: names are not printed), and the numeric check on zoo models (the
// reference interpreter before and after the pass, max|Δ| <= 1e-4 · max|ref|).
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/passes/pass.h"
#include "kiln/runtime/interpreter.h"
#include "passes/fuse_passes.h"

namespace kiln::fusiontest {

inline std::string canonical(const Model& m) {
  PrintOptions po;
  po.show_names = false;
  return print_model(m, po);
}

// Parses `before`, runs the pass (verifying and inferring before and after) and returns the
// model; `changed` receives run()'s answer.
inline Model run_pass_on_text(passes::Pass& pass, const std::string& before, bool* changed = nullptr,
                              passes::PassContext* ctx = nullptr) {
  Model m = parse_model(before);
  ops::verify_model(m);
  ops::infer_shapes(m);
  passes::PassContext local;
  bool c = pass.run(m, ctx ? *ctx : local);
  ops::verify_model(m);
  ops::infer_shapes(m);
  if (changed) *changed = c;
  return m;
}

// The pass turns `before` into `after` (both canonicalised through parse + print).
inline void expect_rewrite(passes::Pass& pass, const std::string& before, const std::string& after) {
  bool changed = false;
  Model m = run_pass_on_text(pass, before, &changed);
  Model want = parse_model(after);
  ops::infer_shapes(want);
  EXPECT_TRUE(changed);
  EXPECT_EQ(canonical(m), canonical(want));
}

// The pass leaves `text` alone and says so.
inline void expect_unchanged(passes::Pass& pass, const std::string& text) {
  bool changed = true;
  Model m = run_pass_on_text(pass, text, &changed);
  Model want = parse_model(text);
  ops::infer_shapes(want);
  EXPECT_FALSE(changed);
  EXPECT_EQ(canonical(m), canonical(want));
}

inline std::filesystem::path zoo_dir(const std::string& model) {
  return std::filesystem::path(KILN_BINARY_DIR) / "zoo" / model;
}

inline std::map<std::string, Tensor> zoo_inputs(const std::string& model) {
  std::map<std::string, Tensor> in;
  for (const auto& f : std::filesystem::directory_iterator(zoo_dir(model) / "inputs"))
    if (f.path().extension() == ".npy") in[f.path().stem().string()] = read_npy(f.path().string());
  return in;
}

inline size_t count_op(const Model& m, const std::string& domain, const std::string& op) {
  size_t n = 0;
  for (const auto& node : m.graph->nodes()) n += node->domain == domain && node->op == op;
  return n;
}

struct ZooResult {
  size_t nodes_before = 0, nodes_after = 0;
  Model model;  // after the passes
};

// Imports the zoo model, runs it, applies `passes` in order (verifying after each), runs it
// again and checks every output within 1e-4 · max|reference|.
inline ZooResult check_zoo_model(const std::string& name, const std::vector<passes::Pass*>& pipeline) {
  ZooResult r;
  Model m = import_onnx((zoo_dir(name) / "model.onnx").string());
  auto inputs = zoo_inputs(name);
  auto before = run_model(m, inputs);
  r.nodes_before = m.graph->nodes().size();
  passes::PassContext ctx;
  for (passes::Pass* p : pipeline) {
    p->run(m, ctx);
    ops::verify_model(m);
    ops::infer_shapes(m);
  }
  r.nodes_after = m.graph->nodes().size();
  auto after = run_model(m, inputs);
  for (const auto& [out, ref] : before) {
    SCOPED_TRACE(out);
    const Tensor& got = after.at(out);
    EXPECT_EQ(dims_str(got.dims()), dims_str(ref.dims()));
    if (got.dims() != ref.dims()) continue;
    double worst = 0, scale = 0;
    for (int64_t i = 0; i < ref.numel(); ++i) {
      worst = std::max(worst, std::abs(got.as_double(i) - ref.as_double(i)));
      scale = std::max(scale, std::abs(ref.as_double(i)));
    }
    EXPECT_LE(worst, 1e-4 * scale) << name << " output " << out << ": max|diff| " << worst << ", max|ref| " << scale;
  }
  r.model = std::move(m);
  return r;
}

inline bool zoo_available(const std::string& name) { return std::filesystem::exists(zoo_dir(name) / "model.onnx"); }

}  // namespace kiln::fusiontest
