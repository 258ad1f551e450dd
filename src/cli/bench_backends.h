// The things `kiln bench` measures: one BenchBackend per way of running a model.
//
//   interp    the reference interpreter (kiln::run_model) on the ONNX / textual-IR model
//   compiled  kiln::compiler::compile_file into a temporary artifact (or a given .kiln
//             artifact), then kiln::Executable::load + run
//   ort       ONNX Runtime in a long-lived node child process (scripts/ort_bench.js)
//
// Every backend is prepared once with the bench inputs, runs once for the output check, then
// times runs in small blocks that the caller interleaves with the other backends'.
#pragma once
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/ops/specialize.h"
#include "kiln/runtime/executable.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::cli {

using TensorMap = std::map<std::string, Tensor>;

class BenchBackend {
 public:
  virtual ~BenchBackend() = default;
  virtual std::string name() const = 0;
  // One-time set-up with the inputs every later run uses (load, compile, start a process).
  virtual void prepare(const TensorMap& inputs) = 0;
  // Runs once and returns the outputs by graph output name (for the output check).
  virtual TensorMap run_once() = 0;
  // Runs `n` times and returns each run's wall time in milliseconds; with gap_ms > 0 the
  // backend idles (sleeps) that long before each run, untimed, as a server between requests
  // would. The default times run_once; a backend in another process times its runs there.
  virtual std::vector<double> time_runs(int n, int gap_ms = 0);
  // Returns once the backend has stopped using the CPU after its last runs (a thread pool that
  // spins before it sleeps), so that the next backend's timed block gets the cores to itself;
  // returns the seconds waited. The interpreter's workers stop within microseconds.
  virtual double wait_until_idle() { return 0; }
  // Seconds spent compiling in prepare(); nullopt when the backend does not compile.
  virtual std::optional<double> compile_seconds() const { return std::nullopt; }
};

// The interpreter on an already loaded model (shapes specialised by the bench flags).
std::unique_ptr<BenchBackend> make_interp_backend(std::shared_ptr<const Model> model, const DimRanges& ranges,
                                                  int threads);

// Where the compiled backend's artifact comes from: compiled from an ONNX file in prepare(),
// or an existing artifact loaded when the backend is made.
struct CompiledBackendSpec {
  std::string model_path;     // ONNX / textual IR to compile, or a .kiln artifact
  bool is_artifact = false;
  ops::InputSpec shapes;      // input shapes the artifact is compiled for (from the bench inputs)
  int threads = 0;
  std::string work_dir;       // where the temporary artifact goes
};

// A compiled backend, which can also say what it runs (needed before inputs exist when MODEL
// is an artifact: its inputs and its source model come from the artifact).
class CompiledBenchBackend : public BenchBackend {
 public:
  // The artifact's manifest and optimized model; only valid for an artifact spec before
  // prepare(), and for every spec after it.
  virtual const ArtifactManifest& manifest() const = 0;
  virtual const Model& model() const = 0;
};

// Defined in bench_compiled.cpp (the only file that needs kiln_compiler and the runtime's
// Executable). Throws kiln::Error (one line) when the artifact cannot be loaded.
std::unique_ptr<CompiledBenchBackend> make_compiled_backend(const CompiledBackendSpec& spec);
// Whether this build has the compiled backend; `kiln bench` defaults to it when it does.
bool compiled_backend_built();

// ONNX Runtime through `node SCRIPT MODEL --threads N`: see scripts/ort_bench.js.
struct OrtBackendSpec {
  std::string script;      // path to ort_bench.js (checked to exist)
  std::string model_path;  // ONNX file
  int threads = 1;
  std::string work_dir;    // inputs and outputs travel as .npy files under here
};
// `outputs`: the graph output names run_once() reads back. Throws (one line, before anything
// starts) when the script or node is missing.
std::unique_ptr<BenchBackend> make_ort_backend(const OrtBackendSpec& spec, const std::vector<std::string>& outputs);
// The same checks, for callers that want them before any other work.
void check_ort_runnable(const std::string& script);

// scripts/ort_bench.js as a child process (the protocol both `--vs ort` verbs speak): MODEL at
// spec.threads, `inputs` written as .npy under spec.work_dir/inputs, outputs to
// spec.work_dir/outputs, then `extra` arguments; returned once it has said it is ready.
class LineProcess;
std::unique_ptr<LineProcess> start_ort_script(const OrtBackendSpec& spec, const TensorMap& inputs,
                                              const std::vector<std::string>& extra = {});
// The next reply line of an ort_bench.js process; once it has exited, its last stderr line
// becomes the (one-line) error.
std::string ort_reply(LineProcess& process);

// The default ort_bench.js: next to the kiln binary's source tree (BUILD/bin/kiln ->
// SOURCE/scripts/ort_bench.js for a build dir inside or beside the source). Throws naming the
// places looked at when none holds it.
std::string find_ort_script();

}  // namespace kiln::cli
