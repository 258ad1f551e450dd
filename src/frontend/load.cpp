#include "kiln/frontend/load.h"

#include <fstream>

#include "kiln/frontend/onnx.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"

namespace kiln {
namespace {

// True when the text starts (after blanks and #/ '//' comment lines) with the textual-IR header.
bool looks_like_text_ir(const std::string& head) {
  size_t i = 0;
  while (i < head.size()) {
    char c = head[i];
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
      ++i;
    } else if (c == '#' || (c == '/' && i + 1 < head.size() && head[i + 1] == '/')) {
      while (i < head.size() && head[i] != '\n') ++i;
    } else {
      return head.compare(i, 10, "kiln.model") == 0;
    }
  }
  return false;
}

// The first 4 KiB of an open file.
std::string read_head(std::ifstream& in) {
  std::string head(4096, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

}  // namespace

bool is_textual_ir_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return in.good() && looks_like_text_ir(read_head(in));
}

Model load_model_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), path, ": cannot open");
  if (!looks_like_text_ir(read_head(in))) return import_onnx(path);
  in.clear();
  in.seekg(0);
  Model m = parse_model(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
  m.source_path = path;
  ops::verify_model(m);
  ops::infer_shapes(m);
  return m;
}

}  // namespace kiln
