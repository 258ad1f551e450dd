// Pieces every verb shares: loading a model with the dim/shape flags applied.
#pragma once
#include <string>
#include <string_view>

#include "args.h"
#include "kiln/ir/graph.h"
#include "kiln/ops/specialize.h"
#include "kiln/runtime/interpreter.h"

namespace kiln::cli {

// Flags that fix dynamic dims; every verb that loads a model accepts them.
inline const std::set<std::string> kShapeFlags = {"--dim", "--shape"};

struct ShapeFlags {
  ops::InputSpec spec;  // --dim NAME=N, --shape INPUT=d0,d1,...
  DimRanges ranges;     // --dim NAME=LO..HI
};
ShapeFlags parse_shape_flags(const Args& a);

// Loads an ONNX model or a kiln textual-IR file (recognised by its "kiln.model" header),
// applies the shape flags and infers shapes.
Model load_model(const std::string& path, const ShapeFlags& flags);

// Output file name for a tensor name: characters outside [A-Za-z0-9._-] become '_'.
std::string sanitize_name(const std::string& name);

// Takes -O0..-O3 out of argv (Args only knows --flags and -o): returns the level (`dflt` when
// absent) and leaves the other arguments in `rest`. A malformed level is an error naming the verb.
int take_opt_level(const std::string& verb, int argc, char** argv, std::vector<char*>& rest, int dflt);

// Creates a directory and its parents; throws naming the path on failure.
void make_dirs(const std::string& path);

// A fresh directory under the system's temporary directory ("<prefix>.XXXXXX"), removed with
// everything in it when this goes out of scope.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// Writes an output file (--out, --svg, --trace, ...) through PATH.tmp and a rename, so a failed
// write never leaves a half file behind; a path that exists and is not a regular file (a device
// such as /dev/stdout, a pipe) is written in place. Throws "PATH: cannot write".
void write_file(const std::string& path, std::string_view text);

// Pins this process (every thread it has now; threads and child processes started later
// inherit it) to the first `threads` CPUs it may run on, when that is fewer than all of them,
// so that a timed comparison runs kiln and its peer (ONNX Runtime's child process) on the same
// cores: the vCPUs of a virtual machine can run at different speeds at the same moment (the
// project's 2-vCPU host read 177 and 115 GFLOP/s on its two a second apart), and one thread of
// each landing on different ones skewed one-thread ratios by tens of percent. Returns the CPUs
// chosen ("0", "0,1"), or "" when it did not pin (the threads cover every CPU, or the system
// refused).
std::string pin_to_first_cpus(int threads);
// "CPU 0" or "CPUs 0,1" for pin_to_first_cpus's list, as bench and profile print it.
std::string cpus_text(const std::string& cpus);

// The calling thread's round trip to pool worker 1 (kernels::core_round_trip_ns) in ns, the
// worker woken and kept spinning first; -1 when it did not answer (a loaded machine). Above
// kernels::kFarCoresNs the host has the cores far apart (bench's and profile's placements).
double cores_round_trip_ns(int threads);

// --idle-spin-ms N (whole milliseconds, 0 to 10000): how long the thread pool's workers keep
// spinning after a model run (kernels::set_idle_spin); absent, the default stays.
void apply_idle_spin_flag(const Args& a);

}  // namespace kiln::cli
