// The compiled runtime: loads an artifact (`kiln compile` output) and runs it.
//
// Loading needs neither ONNX, protobuf nor a compiler: the artifact carries the optimized graph
// (textual IR), its weights (packed for the target ISA; run from a huge-page copy, see
// WeightMemory in artifact.h), the generated-kernel library
// and the memory plan. An artifact for another ISA or an incompatible format version is refused
// with a one-line kiln::Error. Running allocates nothing after the first run of a shape: every
// intermediate lives in one arena at an offset fixed by the plan; plans are cached per input shape.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/plan/plan.h"
#include "kiln/runtime/interpreter.h"

namespace kiln {

struct ArtifactManifest {
  std::string kiln_version;
  int64_t format_version = 0;
  std::string source_model;         // path given to `kiln compile`
  std::string source_sha256;        // hash of the source model file
  std::string target_isa;           // "avx512", "avx2", "scalar"
  std::vector<std::string> passes;  // passes run, in order
  std::map<std::string, std::string> dims;  // symbolic dim -> "8" or "1..64"
  int64_t threads = 0;              // default thread count when RunOptions::threads is 0 (0 = all cores)
  std::string compile_key;          // hash of everything that decides the content (recompile cache)
};

// One step of a profiled run (Executable::profile_run): a kernel of the optimized graph.
struct StepTiming {
  std::string node;      // node name in the optimized graph
  std::string op;        // "kiln.FusedConv", "Softmax", ...
  std::string tactic;    // lowering's `tactic` attribute ("" when none was chosen)
  bool fast = false;     // a fast kernel ran it (false: the op table's reference kernel)
  double start_ms = 0;   // since the start of the run
  double ms = 0;         // wall time of the step, steady_clock around the kernel call
  // profile_run(..., rerun): the step run a second time right after itself, its data where the
  // first call left it (in cache, on the cores that wrote it); -1 where it was not run again (a
  // step that writes what it reads, a reference kernel, an If).
  double again_ms = -1;
  // Bytes of a later step's constant weights this step fetched toward cache as it computed, and
  // that step's node (StepContext::warm; docs/runtime.md, "Fetching ahead"); 0 / "" for none.
  int64_t fetch_ahead_bytes = 0;
  std::string fetch_ahead_for;
  // With the pool's stats on around the run (kernels::set_pool_stats; kiln profile --balance):
  // the step's parallel regions, per thread (0: the caller) the time inside their pieces, and
  // the pieces run and stolen, and the regions' wall time (the rest of `ms` is the step's serial
  // code; busy_ms empty when the stats are off).
  std::vector<double> busy_ms;
  int64_t regions = 0, pieces = 0, stolen = 0;
  int region_threads = 0;  // most threads a region of the step was cut for (1: all ran inline)
  double region_ms = 0;
};

class Executable {
 public:
  virtual ~Executable() = default;
  // Throws kiln::Error (one line) for a missing, corrupt, wrong-ISA or wrong-version artifact.
  static std::unique_ptr<Executable> load(const std::string& path);

  virtual const ArtifactManifest& manifest() const = 0;
  virtual const Model& model() const = 0;  // the optimized graph, as run
  // Checks inputs like run_model (names, dtypes, shapes, --dim ranges) and runs.
  virtual std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs,
                                            const RunOptions& opt = {}) = 0;
  // Same with inputs and outputs in graph order (an input with an initializer may be given as an
  // undefined Tensor to take its default). Output buffers are reused across runs of a shape when
  // the caller hands back the tensors of the previous run (or dropped them): a steady loop of
  // run(inputs, outputs) allocates nothing for tensors.
  virtual void run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs, const RunOptions& opt = {}) = 0;

  // Runs once exactly like run() and times every step (one clock read between steps, so the
  // steps' times add up to the run's). Steps whose outputs are all views are skipped by the
  // runtime and do not appear. The original ONNX nodes a step covers are not in the artifact:
  // kiln profile derives them from the source model (analysis/source_map.h).
  // rerun: every fast step whose outputs share no bytes with its inputs runs twice in a row, the
  // second call timed as StepTiming::again_ms (the outputs are the same; kiln profile --rerun).
  virtual std::vector<StepTiming> profile_run(const std::vector<Tensor>& inputs, std::vector<Tensor>& outputs,
                                              const RunOptions& opt = {}, bool rerun = false) = 0;

  // Plans made so far, one per distinct set of input shapes (least recently used dropped past
  // a small limit), and the plan of the last run (nullptr before the first).
  virtual size_t cached_plans() const = 0;
  virtual const plan::Plan* last_plan() const = 0;
};

// The memory plan the runtime makes for `m` at its current input shapes (bind them first, e.g.
// with ops::specialize_inputs), workspace of the fast kernels included: what `kiln compile`
// stores as plan.json and reports. Values whose shape is still symbolic come out Dynamic.
plan::Plan runtime_plan(const Model& m);

// The plans the runtime makes for the If branches in `m` (an arena each, beside the main one),
// at the same shapes, depth first, named "<If node>.then_branch" / "<If node>.else_branch".
struct BranchPlan {
  std::string name;
  plan::Plan plan;
};
std::vector<BranchPlan> runtime_branch_plans(const Model& m);

}  // namespace kiln
