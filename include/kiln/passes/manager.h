// The PassManager: runs an ordered pipeline of named passes over a Model, with the verifier,
// textual-IR dumps and a per-pass record (changed, time, node counts) after every pass.
//
// Pipelines are data: `pipeline_for_level` lists the passes of -O0..-O3, and a pipeline can
// be written as text, 'fold-constants,cse,dce'. A name followed by '*' ('cse*') runs that pass
// until it reports no change (at most kMaxFixedPointRounds times).
#pragma once
#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/text.h"
#include "kiln/passes/pass.h"

namespace kiln::passes {

constexpr int kMaxFixedPointRounds = 8;

// The passes of -O<level> (0..3; throws outside), in order. Names `registry` does not know
// (passes not built into this kiln) are left out; each one left out adds a line to `notes`.
std::vector<std::string> pipeline_for_level(int level, const PassRegistry& registry = PassRegistry::global(),
                                            std::vector<std::string>* notes = nullptr);

// One step of a pipeline.
struct PipelineStep {
  std::string pass;
  bool to_fixed_point = false;  // repeat while the pass reports a change
};

// 'a, b*,c' -> steps. Throws kiln::Error on an empty entry; names are not checked here.
std::vector<PipelineStep> parse_pipeline(std::string_view text);

// What happened in one step.
struct PassRecord {
  std::string pass;
  bool changed = false;
  double ms = 0;             // wall time of the pass itself (not the verifier or dumps)
  size_t nodes_before = 0;   // nodes in the main graph and all subgraphs
  size_t nodes_after = 0;
  int rounds = 1;            // > 1 for a step run to a fixed point
};

struct PipelineOptions {
  int opt_level = 1;
  std::string passes;                  // non-empty: this pipeline replaces the level's
  std::vector<std::string> disabled;   // passes to leave out (each must be a known name)
  bool verify_each = true;             // verify_model + shape consistency after every pass
  std::ostream* print_after_all = nullptr;  // textual IR after every pass
  std::string dump_dir;                // NN-<pass>.kir after every pass, 00-input.kir first
  PrintOptions print_options = default_dump_print_options();

  static PrintOptions default_dump_print_options() {
    PrintOptions p;
    p.elide_weights = true;
    return p;
  }
};

class PassManager {
 public:
  explicit PassManager(const PassRegistry& registry = PassRegistry::global()) : registry_(&registry) {}

  // Builds the pipeline from the options: the level's passes or the explicit list, less the
  // disabled ones. Unknown names in `passes` or `disabled` are errors listing the known passes;
  // unknown names in a level's pipeline are skipped with a line in `notes`.
  static PassManager from_options(const PipelineOptions& opt, const PassRegistry& registry = PassRegistry::global(),
                                  std::vector<std::string>* notes = nullptr);

  // Appends a pass by name (throws naming the known passes when unknown) or an instance.
  void add(std::string_view name, bool to_fixed_point = false);
  void add(std::unique_ptr<Pass> pass, bool to_fixed_point = false);

  void set_verify_each(bool on) { verify_each_ = on; }
  void set_print_after_all(std::ostream* os) { print_after_all_ = os; }
  void set_dump_dir(std::string dir) { dump_dir_ = std::move(dir); }
  void set_print_options(const PrintOptions& p) { print_options_ = p; }

  std::vector<std::string> pass_names() const;

  // Runs every step in order. Shapes are re-inferred (with ctx.bindings) after each pass that
  // changed the model. With verify_each, a pass that leaves an invalid model or shapes that
  // disagree with inference throws kiln::Error naming the pass.
  std::vector<PassRecord> run(Model& m, PassContext& ctx) const;

 private:
  struct Step {
    std::unique_ptr<Pass> pass;
    bool to_fixed_point = false;
  };
  const PassRegistry* registry_;
  std::vector<Step> steps_;
  bool verify_each_ = true;
  std::ostream* print_after_all_ = nullptr;
  std::string dump_dir_;
  PrintOptions print_options_ = PipelineOptions::default_dump_print_options();
};

// Nodes in the graph and all nested subgraphs.
size_t count_nodes(const Graph& g);

// "name  changed  ms  nodes before -> after" rows, one per record, with a header and totals.
std::string format_pass_table(const std::vector<PassRecord>& records);

}  // namespace kiln::passes
