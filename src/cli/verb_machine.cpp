// kiln machine: this machine's measured ceilings (cached; --refresh measures again).
#include <cstdio>

#include "args.h"
#include "kiln/ir/error.h"
#include "kiln/analysis/machine.h"
#include "verbs.h"

namespace kiln::cli {

int verb_machine(int argc, char** argv) {
  Args a("machine", argc, argv, {"--cache"}, {"--json", "--refresh"});
  KILN_CHECK(a.positional().empty(), "kiln machine: takes no positional arguments");
  std::string path = a.get_or("--cache", analysis::default_machine_cache_path());
  bool measured = false, cached = false;
  analysis::MachinePeaks m = analysis::load_or_measure_machine(path, a.has("--refresh"), &measured, {}, &cached);
  std::string out = a.has("--json") ? analysis::machine_to_json(m) : analysis::machine_to_text(m);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (!a.has("--json"))
    std::fprintf(stderr, "%s %s\n", !measured ? "cached in" : cached ? "measured; cached in" : "measured; not cached in",
                 path.c_str());
  if (std::string w = analysis::contention_warning(m); !w.empty())
    std::fprintf(stderr, "kiln machine: warning: %s\n", w.c_str());
  return 0;
}

}  // namespace kiln::cli
