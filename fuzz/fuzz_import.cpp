// libFuzzer target for the ONNX importer. Any input must either import or throw
// kiln::Error; another exception type, a crash or a sanitizer report is a bug.
// A model that imports must also survive export and re-import: what kiln writes, it reads.
#include <cstddef>
#include <cstdint>
#include <string>

#include "kiln/frontend/onnx.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  kiln::Model m;
  try {
    m = kiln::import_onnx_bytes(bytes, kiln::ImportOptions{.verify = true, .infer = true});
  } catch (const kiln::Error&) {
    return 0;
  }
  // Throws (and so aborts the fuzzer) if the exported model does not import again.
  std::string again = kiln::export_onnx_bytes(m);
  kiln::import_onnx_bytes(again, kiln::ImportOptions{.verify = true, .infer = false});
  return 0;
}
