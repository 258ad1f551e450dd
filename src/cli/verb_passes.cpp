// kiln passes: every pass kiln knows (built in, and from --pass-plugin libraries) with its
// one-line summary, then the pipelines of the levels.
#include <cstdio>

#include "args.h"
#include "kiln/passes/manager.h"
#include "kiln/passes/plugin.h"
#include "verbs.h"

namespace kiln::cli {

int verb_passes(int argc, char** argv) {
  Args a("passes", argc, argv, {"--pass-plugin"}, {});
  KILN_CHECK(a.positional().empty(), "kiln passes: takes no arguments besides --pass-plugin");
  for (const auto& p : a.all("--pass-plugin")) passes::load_pass_plugin(p);
  auto& registry = passes::PassRegistry::global();
  for (const auto& name : registry.names())
    std::printf("%-22s %s\n", name.c_str(), std::string(registry.create(name)->summary()).c_str());
  std::printf("\n");
  for (int level = 0; level <= 3; ++level) {
    std::vector<std::string> notes;
    std::string line;
    for (const auto& n : passes::pipeline_for_level(level, registry, &notes)) line += (line.empty() ? "" : ",") + n;
    std::printf("-O%d  %s%s\n", level, line.empty() ? "(nothing)" : line.c_str(),
                notes.empty() ? "" : str_cat("  [", notes.size(), " not built in]").c_str());
  }
  return 0;
}

}  // namespace kiln::cli
