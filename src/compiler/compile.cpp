// The compile driver: source model -> passes -> lowering -> generated kernels -> plan -> artifact.
// Each stage is a library of its own; this file only sequences them and writes the report.
#include "kiln/compiler/compile.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <map>
#include <sstream>
#ifdef __GLIBC__  // defined by the headers above
#include <malloc.h>
#endif

#include "kiln/codegen/build.h"
#include "kiln/codegen/emit.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/kiln_ops.h"
#include "kiln/ops/op.h"
#include "kiln/passes/manager.h"
#include "kiln/passes/plugin.h"
#include "kiln/plan/plan.h"
#include "kiln/runtime/artifact.h"
#include "compile_internal.h"

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), path, ": cannot open");
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string tactic_summary(const lower::LowerReport& r) {
  std::map<std::string, int> count;
  for (const auto& k : r.kernels) ++count[k.tactic];
  std::ostringstream s;
  s << r.kernels.size() << " kernels:";
  for (const auto& [t, c] : count) s << " " << t << " " << c << ",";
  std::string text = s.str();
  text.pop_back();
  return text;
}

std::string mib(double bytes) {
  std::ostringstream s;
  s.precision(2);
  s << std::fixed << bytes / (1024.0 * 1024.0) << " MiB";
  return s.str();
}

// The memory plan stored in the artifact and shown by --report. When input dims are still
// symbolic the runtime plans each shape on first sight; the report then plans a copy with every
// symbolic dim at the smallest size it accepts (the range's minimum, else 1) and says so.
struct PlanText {
  std::string json, report, note;
};

// The If branches' own arenas (runtime_branch_plans): how many, the main arena plus all of them
// (what the runtime allocates for the shape), and the largest few.
std::string branch_report(const Model& m, const plan::Plan& main) {
  std::vector<BranchPlan> branches = runtime_branch_plans(m);
  if (branches.empty()) return "";
  int64_t total = main.arena_bytes;
  for (const BranchPlan& b : branches) total += b.plan.arena_bytes;
  std::stable_sort(branches.begin(), branches.end(),
                   [](const BranchPlan& a, const BranchPlan& b) { return a.plan.arena_bytes > b.plan.arena_bytes; });
  std::ostringstream s;
  s << "If branches: " << branches.size() << " planned, each with an arena of its own; the main arena and theirs: "
    << total << " bytes\n";
  for (size_t i = 0; i < std::min<size_t>(branches.size(), 6); ++i) {
    const plan::Plan& p = branches[i].plan;
    s << "  " << std::left << std::setw(48) << branches[i].name << std::right << std::setw(5) << p.steps.size()
      << " steps, arena " << p.arena_bytes << " bytes (lower bound " << p.lower_bound_bytes << ")\n";
  }
  if (branches.size() > 6) s << "  ... " << branches.size() - 6 << " more\n";
  return s.str();
}

PlanText plan_for_report(const Model& m, const CompileOptions& opt) {
  std::vector<std::string> symbols = ops::input_dim_symbols(*m.graph);
  PlanText out;
  if (symbols.empty()) {
    plan::Plan p = runtime_plan(m);
    return {p.to_json(), p.report() + branch_report(m, p), ""};
  }
  PrintOptions po;
  po.elide_weights = true;  // only shapes matter to the plan; elided weights read back as zero pages
  po.elide_over = 0;
  try {
    Model copy = parse_model(print_model(m, po));
    ops::InputSpec spec;
    std::string at;
    for (const auto& sym : symbols) {
      auto r = opt.ranges.find(sym);
      spec.dims[sym] = r != opt.ranges.end() ? std::max<int64_t>(r->second.min, 1) : 1;
      at += (at.empty() ? "" : ", ") + sym + "=" + std::to_string(spec.dims[sym]);
    }
    ops::specialize_inputs(copy, spec);
    plan::Plan p = runtime_plan(copy);
    return {p.to_json(), p.report() + branch_report(copy, p),
            "memory plan shown for " + at + " (dynamic dims; other shapes are planned on first run)"};
  } catch (const Error& e) {
    plan::Plan p = runtime_plan(m);
    return {p.to_json(), p.report(), std::string("memory plan with symbolic dims left dynamic: ") + e.what()};
  }
}

}  // namespace

static CompileReport compile_without_trim(const std::string& model_path, const std::string& out_path, const CompileOptions& opt) {
  auto t0 = Clock::now();
  CompileReport rep;
  KILN_CHECK(opt.opt_level >= 0 && opt.opt_level <= 3, "-O", opt.opt_level, ": levels are -O0 .. -O3");
  std::string source_sha = sha256_file(model_path);
  std::string key = compile_key(source_sha, opt);
  if (artifact_matches(out_path, key)) {
    rep.cache_hit = true;
    rep.seconds = seconds_since(t0);
    rep.text = "cache hit: " + out_path + " is up to date (same source, options and kiln build)\n";
    return rep;
  }

  Model m = load_source_model(model_path, opt.inputs);
  auto t_import = seconds_since(t0);

  // ---- passes
  for (const auto& p : opt.plugins) passes::load_pass_plugin(p);
  passes::PipelineOptions popt;
  popt.opt_level = opt.opt_level;
  popt.passes = opt.passes;
  popt.disabled = opt.disabled;
  popt.verify_each = opt.verify_each;
  popt.dump_dir = opt.dump_dir;
  if (opt.print_after_all) popt.print_after_all = opt.print_stream;
  std::vector<std::string> notes;
  passes::PassManager pm = passes::PassManager::from_options(popt, passes::PassRegistry::global(), &notes);
  passes::PassContext ctx;
  ctx.explain = opt.explain;
  ctx.bindings = opt.inputs.dims;
  auto t_passes0 = Clock::now();
  std::vector<passes::PassRecord> records = pm.run(m, ctx);
  double t_passes = seconds_since(t_passes0);
  for (const auto& r : records) rep.passes_run.push_back(r.pass);
  rep.remarks = std::move(ctx.remarks);

  // ---- lowering and generated kernels
  auto t_lower0 = Clock::now();
  lower::LowerReport lowered = lower::lower_model(m);
  ops::verify_model(m);
  ops::infer_shapes(m, opt.inputs.dims);
  double t_lower = seconds_since(t_lower0);
  auto t_gen0 = Clock::now();
  std::vector<std::string> not_generated;
  std::vector<codegen::GeneratedKernel> gen = codegen::emit_graph_kernels(*m.graph, {}, &not_generated);
  std::string library;
  codegen::KernelLibrary lib;
  if (!gen.empty()) {
    codegen::BuildOptions bopt;
    bopt.cache_dir = opt.cache_dir.empty() ? codegen::default_cache_dir() : opt.cache_dir;
    bopt.target_isa = std::string(kernels::gemm_isa());
    bopt.dump_dir = opt.dump_dir;
    lib = codegen::build_kernel_library(gen, bopt);
    library = read_file(lib.path);
  }
  double t_gen = seconds_since(t_gen0);

  // ---- memory plan for the compiled shape (the runtime re-plans other shapes on first sight)
  PlanText mem = plan_for_report(m, opt);

  // ---- artifact
  ArtifactManifest man;
  man.source_model = fs::absolute(model_path).string();
  man.source_sha256 = source_sha;
  man.target_isa = std::string(kernels::gemm_isa());
  man.passes = rep.passes_run;
  man.compile_key = key;
  for (const auto& [name, v] : opt.inputs.dims) man.dims[name] = std::to_string(v);
  for (const auto& [name, r] : opt.ranges) man.dims[name] = std::to_string(r.min) + ".." + std::to_string(r.max);
  write_artifact(out_path, man, m, library, mem.json);
  rep.seconds = seconds_since(t0);

  std::ostringstream s;
  for (const auto& n : notes) s << "note: " << n << "\n";
  s << passes::format_pass_table(records);
  s << "lowering: " << tactic_summary(lowered) << "; packed weights " << mib(lowered.packed_bytes) << " for "
    << lowered.isa;
  if (lowered.blocked_tensors > 0)
    s << "; " << lowered.blocked_tensors << " activations channel-blocked (between direct convolutions and pools)";
  if (lowered.wide_tensors > 0) s << ", " << lowered.wide_tensors << " of them in 16-channel blocks";
  if (lowered.padded_tensors > 0)
    s << "; " << lowered.padded_tensors << " written into their reader's padded planes";
  if (lowered.winograd_convs > 0)
    s << "; " << lowered.winograd_convs << " direct convolution" << (lowered.winograd_convs == 1 ? "" : "s")
      << " as F(2x2, 3x3) Winograd tiles";
  if (lowered.nhwc_tensors > 0)
    s << "; " << lowered.nhwc_tensors << " INT8 activations pixel-major (between INT8 convolutions)";
  if (lowered.folded_means > 0)
    s << "; " << lowered.folded_means
      << (lowered.folded_means == 1 ? " global average folded into its depthwise convolution"
                                    : " global averages folded into their depthwise convolutions");
  if (lowered.expand_depthwise > 0)
    s << "; " << lowered.expand_depthwise << " expand 1x1 + depthwise pair" << (lowered.expand_depthwise == 1 ? "" : "s")
      << " run band by band";
  if (lowered.depthwise_project > 0)
    s << "; " << lowered.depthwise_project << " depthwise + 1x1 projection pair"
      << (lowered.depthwise_project == 1 ? "" : "s") << " run band by band";
  if (lowered.stem_depthwise_project > 0)
    s << " (" << lowered.stem_depthwise_project << " with the stem before "
      << (lowered.stem_depthwise_project == 1 ? "it" : "them") << ")";
  s << "\n";
  if (!gen.empty())
    s << "generated kernels: " << gen.size() << " in one library (" << (lib.cache_hit ? "cache hit" : "compiled")
      << ", " << lib.compile_seconds << " s)\n";
  for (const auto& why : not_generated) s << "not generated (runs the reference kernels): " << why << "\n";
  if (!mem.note.empty()) s << mem.note << "\n";
  s << mem.report;
  s.precision(2);
  s << std::fixed << "time: import " << t_import << " s, passes " << t_passes << " s, lowering " << t_lower
    << " s, codegen " << t_gen << " s, total " << rep.seconds << " s\n";
  rep.text = s.str();
  rep.kernels = std::move(lowered.kernels);
  return rep;
}

CompileReport compile_file(const std::string& model_path, const std::string& out_path, const CompileOptions& opt) {
  CompileReport rep = compile_without_trim(model_path, out_path, opt);
#ifdef __GLIBC__
  // The compile's graphs, copies and packed weights are freed by now, but glibc keeps the heap
  // they grew (bert_base: ~1.2 GB resident after `kiln bench model.onnx` had compiled in
  // process). Give those pages back before the caller loads and runs the artifact.
  malloc_trim(0);
#endif
  return rep;
}

}  // namespace kiln::compiler
