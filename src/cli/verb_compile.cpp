// kiln compile MODEL -o model.kiln: the optimizing compiler (passes, lowering, generated kernels,
// memory plan) into one artifact that `kiln run` / `kiln bench` load without ONNX or a compiler.
#include <cstdio>
#include <iostream>

#include "common.h"
#include "kiln/compiler/compile.h"
#include "verbs.h"

namespace kiln::cli {

int verb_compile(int argc, char** argv) {
  std::vector<char*> rest;
  int level = take_opt_level("compile", argc, argv, rest, 2);
  Args a("compile", static_cast<int>(rest.size()), rest.data(),
         {"--passes", "--disable-pass", "--dump-dir", "--pass-plugin", "-o", "--out", "--dim", "--shape",
          "--cache-dir", "--threads"},
         {"--print-after-all", "--explain", "--report", "--no-verify", "--quiet"});
  KILN_CHECK(a.positional().size() == 1, "kiln compile: expected one MODEL argument (kiln compile MODEL -o OUT.kiln)");
  std::string out = a.get_or("-o", a.get_or("--out", ""));
  KILN_CHECK(!out.empty(), "kiln compile: -o OUT.kiln is required");
  ShapeFlags flags = parse_shape_flags(a);

  compiler::CompileOptions opt;
  opt.opt_level = level;
  opt.passes = a.get_or("--passes", "");
  opt.disabled = a.all("--disable-pass");
  opt.plugins = a.all("--pass-plugin");
  opt.dump_dir = a.get_or("--dump-dir", "");
  opt.print_after_all = a.has("--print-after-all");
  opt.print_stream = &std::cerr;
  opt.explain = a.has("--explain");
  opt.verify_each = !a.has("--no-verify");
  opt.inputs = flags.spec;
  opt.ranges = flags.ranges;
  opt.cache_dir = a.get_or("--cache-dir", "");
  opt.threads = static_cast<int>(a.get_int("--threads", 0));
  if (!opt.dump_dir.empty()) make_dirs(opt.dump_dir);

  compiler::CompileReport rep = compiler::compile_file(a.positional()[0], out, opt);
  bool quiet = a.has("--quiet");
  if (a.has("--report") || (!quiet && !rep.cache_hit)) std::fputs(rep.text.c_str(), stdout);
  if (rep.cache_hit && !quiet) std::fputs(rep.text.c_str(), stdout);
  if (opt.explain) {
    std::printf("\nfusion remarks:\n");
    for (const auto& r : rep.remarks)
      std::printf("  %-18s %-8s %s: %s\n", r.pass.c_str(), r.applied ? "applied" : "declined", r.node.c_str(),
                  r.message.c_str());
    std::printf("\nkernels (tactic: why):\n");
    for (const auto& k : rep.kernels)
      std::printf("  %-40s %-24s %-10s %s\n", k.node.c_str(), k.op.c_str(), k.tactic.c_str(), k.why.c_str());
  }
  std::fprintf(stderr, "%s %s (%.2f s)\n", rep.cache_hit ? "up to date:" : "wrote", out.c_str(), rep.seconds);
  return 0;
}

}  // namespace kiln::cli
