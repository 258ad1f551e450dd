// The inputs `kiln bench` feeds every backend: the same tensors for kiln and ONNX Runtime.
//
// Each graph input comes from, in order: `--input NAME=FILE.npy`; the model zoo's
// `inputs/<name>.npy` beside the model (real token ids, real images); else random values with a
// fixed seed (floats uniform in [-1, 1), integers in [0, 100), bools 0/1). `--batch B` makes
// the leading dim of every batched input B: files are cut or cycled along it to B rows.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "bench_backends.h"

namespace kiln::cli {

// The dim bindings that give every input of `g` the leading dim `batch`: symbolic first dims
// are bound to it; a static first dim other than `batch` is an error naming the input.
// Scalars are not batched.
DimBindings batch_bindings(const Graph& g, int64_t batch);

struct InputRequest {
  DimBindings dims;                                // sizes of symbolic dims (--dim, --batch)
  std::map<std::string, std::string> files;       // --input NAME=FILE
  std::vector<std::string> zoo_dirs;              // dirs whose inputs/<name>.npy are used by default
  std::optional<int64_t> batch;                    // --batch
  uint64_t seed = 0;
};

struct BenchInputs {
  TensorMap tensors;
  std::vector<std::string> origins;  // one line per input: "input f32[1,3,224,224] from FILE"
  bool random_integers = false;      // some integer input is random: its values may be invalid ids
  int64_t batch = 1;                 // leading dim of the first non-scalar input
};

// Throws kiln::Error naming the input for unknown --input names, unreadable files, dims that
// random values need but nobody gave, and files whose dims disagree with the graph.
BenchInputs make_bench_inputs(const Graph& g, const InputRequest& req);

}  // namespace kiln::cli
