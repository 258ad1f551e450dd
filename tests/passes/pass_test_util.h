// Helpers for pass tests: textual-IR before -> after checks, and numeric before/after runs
// on real models with the reference interpreter.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/analysis/compare.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"
#include "kiln/ops/specialize.h"
#include "kiln/passes/manager.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::passes::test {

inline Model parse_verified(const std::string& text) {
  Model m = parse_model(text);
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

// Structure only: no node names, no result types (shapes are checked by the verifier).
inline std::string show(const Model& m) {
  PrintOptions p;
  p.show_names = false;
  p.show_shapes = false;
  return print_model(m, p);
}

// The expected text, normalised by parsing and printing it.
inline std::string canonical(const std::string& text) { return show(parse_model(text)); }

struct PassRun {
  Model model;
  std::vector<PassRecord> records;
  PassContext ctx;
  bool changed() const { return !records.empty() && records.back().changed; }
};

// Runs the named passes (verifier after each) on the model the text describes.
inline PassRun run_passes(const std::string& text, const std::vector<std::string>& names, bool explain = false) {
  PassRun r;
  r.model = parse_verified(text);
  r.ctx.explain = explain;
  PassManager pm;
  for (const auto& n : names) pm.add(n);
  r.records = pm.run(r.model, r.ctx);
  return r;
}

// before --pass--> after, compared as structure; the pass must report a change.
inline void expect_rewrite(const std::string& pass, const std::string& before, const std::string& after) {
  PassRun r = run_passes(before, {pass});
  EXPECT_EQ(show(r.model), canonical(after));
  EXPECT_TRUE(r.changed()) << pass << " did not report a change";
}

// The pass must leave the text as it was and report no change.
inline void expect_unchanged(const std::string& pass, const std::string& text) {
  PassRun r = run_passes(text, {pass});
  EXPECT_EQ(show(r.model), canonical(text));
  EXPECT_FALSE(r.changed()) << pass << " reported a change";
}

// The message of the kiln::Error f throws, or "" when it throws none.
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- real models --------------------------------------------------------------------
inline std::filesystem::path zoo_dir(const std::string& model) {
  return std::filesystem::path(KILN_BINARY_DIR) / "zoo" / model;
}

inline std::map<std::string, Tensor> zoo_inputs(const std::filesystem::path& dir) {
  std::map<std::string, Tensor> in;
  for (const auto& e : std::filesystem::directory_iterator(dir / "inputs"))
    if (e.path().extension() == ".npy") in[e.path().stem().string()] = read_npy(e.path().string());
  return in;
}

// Imports a model and fixes its dynamic dims to the shapes of the given inputs.
inline Model load_specialized(const std::filesystem::path& onnx, const std::map<std::string, Tensor>& inputs,
                              DimBindings* bound = nullptr) {
  Model m = import_onnx(onnx.string());
  ops::InputSpec spec;
  for (const auto& [name, t] : inputs) spec.shapes[name] = t.dims();
  DimBindings b = ops::specialize_inputs(m, spec);
  if (bound) *bound = b;
  return m;
}

// Every output of `after` matches `before` within rel_tol * max|before|.
inline void expect_same_outputs(const std::map<std::string, Tensor>& before, const std::map<std::string, Tensor>& after,
                                double rel_tol, const std::string& what) {
  ASSERT_EQ(before.size(), after.size()) << what;
  for (const auto& [name, ref] : before) {
    auto it = after.find(name);
    ASSERT_NE(it, after.end()) << what << ": output '" << name << "' is gone";
    Comparison c = compare_tensors(it->second, ref, rel_tol);
    EXPECT_TRUE(c.ok) << what << ": output '" << name << "': " << c.str();
  }
}

}  // namespace kiln::passes::test
