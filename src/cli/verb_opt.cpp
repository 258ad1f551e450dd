// kiln opt MODEL: runs a pass pipeline (a level or an explicit list) and prints what each pass
// did; optionally writes the optimized model. `kiln compile` builds on the same PassManager.
#include <cstdio>
#include <cstring>
#include <iostream>

#include "common.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/text.h"
#include "kiln/passes/manager.h"
#include "kiln/passes/plugin.h"
#include "verbs.h"

namespace kiln::cli {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void check_output_path(const std::string& path) {
  KILN_CHECK(path.empty() || ends_with(path, ".kir") || ends_with(path, ".onnx"),
             "kiln opt: -o wants a .kir or .onnx file, got '", path, "'");
}

void write_model(const Model& m, const std::string& path) {
  if (ends_with(path, ".onnx")) {
    export_onnx(m, path);
    return;
  }
  write_file(path, print_model(m));
}

// Loads every --pass-plugin into the global registry; says what each one added on stderr.
void load_plugins(const Args& a) {
  for (const auto& p : a.all("--pass-plugin")) {
    std::string added;
    for (const auto& n : passes::load_pass_plugin(p)) added += " " + n;
    std::fprintf(stderr, "plugin %s:%s\n", p.c_str(), added.c_str());
  }
}

}  // namespace

int verb_opt(int argc, char** argv) {
  std::vector<char*> rest;
  int level = take_opt_level("opt", argc, argv, rest, 2);
  Args a("opt", static_cast<int>(rest.size()), rest.data(),
         {"--passes", "--disable-pass", "--dump-dir", "--pass-plugin", "-o", "--out", "--dim", "--shape"},
         {"--print-after-all", "--explain"});
  KILN_CHECK(a.positional().size() == 1, "kiln opt: expected one MODEL argument");
  std::string out = a.get_or("-o", a.get_or("--out", ""));
  check_output_path(out);
  load_plugins(a);
  ShapeFlags flags = parse_shape_flags(a);
  Model m = load_model(a.positional()[0], flags);

  passes::PipelineOptions opt;
  opt.opt_level = level;
  opt.passes = a.get_or("--passes", "");
  opt.disabled = a.all("--disable-pass");
  opt.dump_dir = a.get_or("--dump-dir", "");
  if (a.has("--print-after-all")) opt.print_after_all = &std::cerr;
  std::vector<std::string> notes;
  passes::PassManager pm = passes::PassManager::from_options(opt, passes::PassRegistry::global(), &notes);
  for (const auto& n : notes) std::fprintf(stderr, "note: %s\n", n.c_str());

  passes::PassContext ctx;
  ctx.explain = a.has("--explain");
  ctx.bindings = flags.spec.dims;
  auto records = pm.run(m, ctx);
  std::fputs(passes::format_pass_table(records).c_str(), stdout);
  if (ctx.explain) {
    std::printf("\nremarks:\n");
    for (const auto& r : ctx.remarks)
      std::printf("  %-20s %-8s %s: %s\n", r.pass.c_str(), r.applied ? "applied" : "declined", r.node.c_str(),
                  r.message.c_str());
  }
  if (!out.empty()) {
    write_model(m, out);
    std::fprintf(stderr, "wrote %s\n", out.c_str());
  }
  return 0;
}

}  // namespace kiln::cli
