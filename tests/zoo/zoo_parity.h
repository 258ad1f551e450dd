// Parity of kiln's reference interpreter with ONNX Runtime on the model zoo.
// scripts/zoo/prepare.sh (the ctest fixture zoo.prepare) fills <build>/zoo/<model>/ with
// model.onnx, inputs/<input>.npy and ORT's outputs ort/<output>.npy; these helpers run the
// model through kiln (import_onnx -> run_model) and measure how far kiln is from ORT.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::zoo {

// <build>/zoo/<model>
std::filesystem::path model_dir(const std::string& model);

// ort_run.js's file name for an output: characters outside [A-Za-z0-9._-] become '_'.
std::string sanitize(const std::string& name);

// Every inputs/<name>.npy of a model directory, keyed by <name>.
std::map<std::string, Tensor> read_inputs(const std::filesystem::path& dir);

// How one kiln output compares with ORT's.
struct OutputDiff {
  std::string name;
  bool same_shape = false;   // dtype and dims both equal
  double max_abs_diff = 0;   // max |kiln - ort|; +inf when a value is NaN/inf on one side only
  double max_abs_ref = 0;    // max |ort|
  double cosine = 0;         // cosine similarity of the flattened outputs
};
OutputDiff compare(const std::string& name, const Tensor& got, const Tensor& ref);

// The result of one parity run.
struct ParityRun {
  std::vector<OutputDiff> outputs;  // in graph-output order
  size_t ort_files = 0;             // number of ort/*.npy files, to check every output is covered
  double import_ms = 0, run_ms = 0;
  std::map<std::string, Tensor> kiln_outputs;
};

// Imports <dir>/model.onnx, runs it on its inputs with kiln and compares every graph output
// with ort/<sanitized name>.npy. Throws kiln::Error when the directory is incomplete.
ParityRun run_parity(const std::filesystem::path& dir);

// The same with another way of running the imported model (e.g. compile it, then run the artifact).
using Runner = std::function<std::map<std::string, Tensor>(const Model&, const std::map<std::string, Tensor>&)>;
ParityRun run_parity_with(const std::filesystem::path& dir, const Runner& runner);

}  // namespace kiln::zoo
