// Graph passes: the contract every pass follows and the manager that runs pipelines of them.
//
// A pass is one small class in its own file (src/passes/<name>.cpp) with a stable short name
// ("dce", "fold-constants"). It takes a verified Model and leaves a verified Model, and returns
// whether it changed anything. It never reaches into kernels or the runtime. Heuristics that
// decline a rewrite say why through PassContext::decline, which `kiln compile --explain` prints.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::passes {

// The answer of a heuristic: yes, or no with the reason (after XLA's FusionDecision).
class Decision {
 public:
  static Decision yes() { return Decision(true, {}); }
  static Decision no(std::string why) { return Decision(false, std::move(why)); }
  explicit operator bool() const { return ok_; }
  const std::string& reason() const { return reason_; }

 private:
  Decision(bool ok, std::string why) : ok_(ok), reason_(std::move(why)) {}
  bool ok_;
  std::string reason_;
};

// One line of --explain output: which pass looked at which node and what it decided.
struct Remark {
  std::string pass;
  std::string node;    // Node::describe() of the node the remark is about
  bool applied = false;
  std::string message; // what was done, or why it was not
};

struct PassContext {
  bool explain = false;            // collect remarks for declined rewrites too
  std::vector<Remark> remarks;
  DimBindings bindings;            // dims the compile was specialised to (may be empty)

  void applied(std::string_view pass, const Node& n, std::string what);
  void decline(std::string_view pass, const Node& n, const Decision& d);
};

class Pass {
 public:
  virtual ~Pass() = default;
  virtual std::string_view name() const = 0;     // stable, short, kebab-case
  virtual std::string_view summary() const = 0;  // one line for `kiln passes`
  // Returns true when the model changed.
  virtual bool run(Model& m, PassContext& ctx) = 0;
};

using PassFactory = std::function<std::unique_ptr<Pass>()>;

// Every pass kiln knows by name: the built-in ones and those added by plugins.
class PassRegistry {
 public:
  static PassRegistry& global();
  // Throws kiln::Error on a duplicate name.
  void add(std::string name, PassFactory factory);
  // Throws kiln::Error naming the unknown pass and listing the known ones.
  std::unique_ptr<Pass> create(std::string_view name) const;
  bool has(std::string_view name) const;
  std::vector<std::string> names() const;

 private:
  std::vector<std::pair<std::string, PassFactory>> entries_;
};

}  // namespace kiln::passes

// A plugin (`--pass-plugin lib.so`) exports this C function; kiln calls it once after dlopen.
extern "C" {
typedef void (*kiln_register_passes_fn)(kiln::passes::PassRegistry* registry);
}
