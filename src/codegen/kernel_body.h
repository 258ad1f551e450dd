// The per-element part of a fused kernel: which arrays it reads (node inputs and baked constant
// arrays), how each broadcasts against the output, and the body function that computes every
// output from one element of each. The loop structure around it lives in emit.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir/graph.h"

namespace kiln::codegen {

// One array read per output element.
struct Source {
  std::string name;              // array name in the kernel: "in0" (node input 0), "c1" (baked)
  std::string param;             // its parameter of body(): "x0", "xc1"
  DType dtype = DType::undefined;
  int node_input = -1;           // index into the node's inputs, or -1 for a baked constant
  // Per output dim: true when the index moves along it in the compiled shape. Output dims of
  // static size 1 count as not moving (any stride works there).
  std::vector<bool> moves;
  std::vector<int64_t> baked_strides;  // baked constants: element strides per output dim
};

struct KernelBody {
  int rank = 0;                        // output rank
  Shape out_shape;                     // the broadcast of all inputs (symbolic dims kept)
  std::vector<Source> sources;
  std::vector<DType> out_dtypes;       // one per node output
  std::string definitions;             // baked constant arrays (file scope in the kernel's namespace)
  std::string body_fn;                 // `KILN_INLINE void body(<sources>, <outputs>&) {...}`
  std::string signature;               // "in0 f32[N,8], in1 f32[8] -> out0 f32", for a comment
};

// Translates the node's body graph. Throws kiln::Error naming the node (and the body node) when
// something cannot be generated.
KernelBody build_kernel_body(const Node& fused);

// C++ element type of the source's array (node inputs: storage type; baked: see kernel_body.cpp).
std::string element_ctype(const Source& s);

// Expression loading `array[offset]` of source `s` (array = its name, or a pointer into it) in
// its compute type.
std::string load(const Source& s, const std::string& array, const std::string& offset);

}  // namespace kiln::codegen
