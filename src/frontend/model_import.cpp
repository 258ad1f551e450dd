// ModelProto -> Model: parsing, model-level fields, then the graph; verification and
// shape inference when asked. Every error from import_onnx names the file.
#include <climits>
#include <filesystem>

#include "kiln/frontend/onnx.h"
#include "kiln/ops/op.h"
#include "onnx_convert.h"

namespace kiln {
namespace {

constexpr const char* kTooBig = " bytes; protobuf files over 2 GB must keep their weights in external data";

// Fields ONNX requires but protobuf cannot enforce (onnx.proto has no required fields).
void check_required_fields(const onnx::ModelProto& mp) {
  KILN_CHECK(mp.ir_version() > 0, "not a valid ONNX model: ir_version is missing");
  KILN_CHECK(mp.has_graph(), "not a valid ONNX model: it has no graph");
  KILN_CHECK(mp.ir_version() < 3 || mp.opset_import_size() > 0, "not a valid ONNX model: opset_import is missing");
}

void parse_model_bytes(const void* data, size_t size, onnx::ModelProto& mp) {
  KILN_CHECK(size <= static_cast<size_t>(INT_MAX), "model is ", size, kTooBig);
  KILN_CHECK(mp.ParseFromArray(data, static_cast<int>(size)), "not a valid ONNX protobuf (truncated or corrupt)");
  check_required_fields(mp);
}

// The file is memory-mapped for parsing: tensor bytes are copied once, from the page cache
// into the protobuf strings that then become tensor storage. (Chunked reads through
// ParseFromFileDescriptor were twice as slow on a 512 MB model: strings spanning chunks grow
// by reallocation.) The mapping is dropped right after parsing.
void parse_model_file(const std::string& path, onnx::ModelProto& mp) {
  std::error_code ec;
  KILN_CHECK(!std::filesystem::is_directory(path, ec), "is a directory, not an ONNX file");
  std::shared_ptr<Buffer> file = map_file(path);
  parse_model_bytes(file->data(), file->size(), mp);
}

Model model_from_proto(onnx::ModelProto& mp, const std::string& model_dir, const ImportOptions& opt) {
  Model m;
  m.ir_version = mp.ir_version();
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  for (const auto& os : mp.opset_import()) {
    std::string domain = os.domain() == "ai.onnx" ? "" : os.domain();
    KILN_CHECK(m.opsets.emplace(domain, os.version()).second, "opset_import lists domain '",
               domain.empty() ? "ai.onnx" : domain, "' twice");
  }
  if (mp.opset_import_size() == 0) m.opsets[""] = 1;  // IR < 3 models: implicitly opset 1
  onnx_io::TensorSource src{model_dir};
  onnx_io::graph_from_onnx(*mp.mutable_graph(), *m.graph, m.ir_version, src);
  if (m.graph->name.empty()) m.graph->name = "main";
  if (opt.verify) ops::verify_model(m);
  if (opt.infer) ops::infer_shapes(m);
  return m;
}

}  // namespace

Model import_onnx(const std::string& path, const ImportOptions& opt) {
  try {
    onnx::ModelProto mp;
    parse_model_file(path, mp);
    std::string dir = std::filesystem::path(path).parent_path().string();
    Model m = model_from_proto(mp, dir.empty() ? "." : dir, opt);
    m.source_path = path;
    return m;
  } catch (const Error& e) {
    throw Error(str_cat(path, ": ", e.what()));
  }
}

Model import_onnx_bytes(const std::string& bytes, const ImportOptions& opt) {
  onnx::ModelProto mp;
  parse_model_bytes(bytes.data(), bytes.size(), mp);
  return model_from_proto(mp, "", opt);
}

}  // namespace kiln
