#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "compile_internal.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/text.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"

namespace kiln::compiler {

namespace {

// Which kiln build is compiling: the running binary's size and modification time. A rebuilt
// kiln (different passes, kernels or packing) must not reuse artifacts of the previous one,
// and hashing a 30 MB binary on every compile would cost more than the check it guards.
std::string build_identity() {
  struct stat st {};
  if (::stat("/proc/self/exe", &st) != 0) return "unknown";
  return std::to_string(st.st_size) + "@" + std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

}  // namespace

std::string compile_key(const std::string& source_sha256, const CompileOptions& opt) {
  std::ostringstream s;
  s << "kiln " << kiln_version() << " build " << build_identity() << " format " << kArtifactFormatVersion << "\nsource " << source_sha256
    << "\nisa " << kernels::gemm_isa() << "\nO" << opt.opt_level << "\npasses " << opt.passes << "\nverify "
    << opt.verify_each << "\n";
  for (const auto& d : opt.disabled) s << "disable " << d << "\n";
  // A plugin changes the result when its code changes: key on its bytes, not its path.
  for (const auto& p : opt.plugins) s << "plugin " << sha256_file(p) << "\n";
  for (const auto& [k, v] : opt.inputs.dims) s << "dim " << k << "=" << v << "\n";
  for (const auto& [k, v] : opt.ranges) s << "range " << k << "=" << v.min << ".." << v.max << "\n";
  for (const auto& [k, dims] : opt.inputs.shapes) {
    s << "shape " << k << "=";
    for (int64_t d : dims) s << d << ",";
    s << "\n";
  }
  std::string text = s.str();
  return sha256_hex(text.data(), text.size());
}

bool artifact_matches(const std::string& path, const std::string& key) {
  if (!is_artifact_file(path)) return false;
  try {
    return read_artifact_manifest(path).compile_key == key;
  } catch (const Error&) {
    return false;  // unreadable or corrupt: compile again and replace it
  }
}

Model load_source_model(const std::string& path, const ops::InputSpec& inputs) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), path, ": cannot open");
  char head[10] = {};
  in.read(head, sizeof head);
  Model m;
  if (std::string(head, static_cast<size_t>(in.gcount())).rfind("kiln.model", 0) == 0) {
    in.seekg(0);
    m = parse_model(std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()));
    m.source_path = path;
    ops::verify_model(m);
    ops::infer_shapes(m);
  } else {
    m = import_onnx(path);
  }
  if (!inputs.dims.empty() || !inputs.shapes.empty()) ops::specialize_inputs(m, inputs);
  return m;
}

}  // namespace kiln::compiler
