#include <sstream>

#include "compile_internal.h"
#include "kiln/frontend/load.h"
#include "kiln/ir/build_identity.h"
#include "kiln/kernels/conv.h"
#include "kiln/kernels/gemm_packed.h"
#include "kiln/lower/lower.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/artifact.h"

namespace kiln::compiler {

std::string compile_key(const std::string& source_sha256, const CompileOptions& opt) {
  std::ostringstream s;
  s << "kiln " << kiln_version() << " build " << build_identity() << " format " << kArtifactFormatVersion << "\nsource " << source_sha256
    << "\nisa " << kernels::gemm_isa() << "\nO" << opt.opt_level << "\npasses " << opt.passes << "\nverify "
    << opt.verify_each << "\n";
  for (const auto& d : opt.disabled) s << "disable " << d << "\n";
  if (!lower::blocked_layout_enabled()) s << "no blocked layout\n";
  if (!lower::wide_blocks_enabled()) s << "no wide blocks\n";
  if (!lower::wide_depthwise_enabled()) s << "no wide depthwise\n";
  if (!lower::int8_nhwc_enabled()) s << "no pixel-major int8\n";
  if (!lower::fold_means_enabled()) s << "no folded averages\n";
  if (!lower::expand_depthwise_enabled()) s << "no expand + depthwise bands\n";
  if (!lower::depthwise_project_enabled()) s << "no depthwise + projection bands\n";
  if (!lower::stem_depthwise_project_enabled()) s << "no stem + depthwise + projection bands\n";
  if (!lower::padded_planes_enabled()) s << "no padded planes\n";
  if (!kernels::conv_direct_p64_enabled()) s << "no 6 x 64 direct tile\n";
  if (!kernels::conv_winograd_enabled()) s << "no Winograd tiles\n";
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
  Model m = load_model_file(path);
  if (!inputs.dims.empty() || !inputs.shapes.empty()) ops::specialize_inputs(m, inputs);
  return m;
}

}  // namespace kiln::compiler
