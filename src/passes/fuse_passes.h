// Factories of the fusion and layout passes (src/passes/fuse_*.cpp, layout.cpp). The pass
// registry (pass_list.inc: KILN_PASS(fuse_epilogue, "fuse-epilogue"), ...) declares the same
// functions; this header lets the fusion tests create them without the registry.
#pragma once
#include <memory>

#include "kiln/passes/pass.h"

namespace kiln::passes {

std::unique_ptr<Pass> make_fuse_epilogue();     // "fuse-epilogue"
std::unique_ptr<Pass> make_fuse_layernorm();    // "fuse-layernorm"
std::unique_ptr<Pass> make_fuse_attention();    // "fuse-attention"
std::unique_ptr<Pass> make_fold_attention_views();  // "fold-attention-views"
std::unique_ptr<Pass> make_fuse_elementwise();  // "fuse-elementwise"
std::unique_ptr<Pass> make_layout();            // "layout"

}  // namespace kiln::passes
