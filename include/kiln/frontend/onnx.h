// ONNX import and export. protobuf types never leave frontend/: callers see kiln::Model.
#pragma once
#include <string>

#include "kiln/ir/graph.h"

namespace kiln {

struct ImportOptions {
  bool verify = true;        // run ops::verify_model after import
  bool infer = true;         // run ops::infer_shapes after import
};

// Loads an ONNX model file (with external-data tensors resolved relative to the file,
// memory-mapped). Throws kiln::Error with one clear line on any bad input: unreadable or
// truncated file, protobuf that violates ONNX rules, unknown op or opset out of range
// (naming node, op and opset).
//
// Import rules worth knowing:
// - From IR 4 on, a graph input that also has an initializer stays an input, with the
//   initializer as its default; before IR 4 such inputs are plain weights.
// - External data locations must stay inside the model's directory (no "..", not absolute).
// - Empty node names get generated ones and duplicates a suffix ("conv", "conv_1").
// - value_info and output types are hints: they fill dtypes/shapes the nodes leave open.
// - Subgraph (If/Loop/Scan) nodes that read outer names point at the outer Values.
Model import_onnx(const std::string& path, const ImportOptions& opt = {});
Model import_onnx_bytes(const std::string& bytes, const ImportOptions& opt = {});

// Writes a kiln Model as ONNX (atomically: temp file + rename). Tensors over
// `external_over_bytes` go to "<path>.data" as external data when >= 0.
void export_onnx(const Model& m, const std::string& path, int64_t external_over_bytes = -1);
std::string export_onnx_bytes(const Model& m);

}  // namespace kiln
