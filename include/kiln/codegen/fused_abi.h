// The calling convention between generated kernels and the runtime (kept C-compatible: the
// generated library is built by the system compiler separately from kiln).
//
// codegen emits one function per kiln.FusedElementwise node and records its symbol in the node's
// string attribute `kernel`; the artifact carries the shared library. The runtime resolves the
// symbol with dlsym once at load and calls it over ranges of the output, from several threads.
//
// Every output of a fused node has the same shape (the broadcast of its inputs' shapes): `rank`
// dims in `out_dims`. Input i is read at element offset sum_d(idx[d] * in_strides[i][d]) for the
// row-major output index idx, with stride 0 along broadcast dims (so scalars have all-zero
// strides). Generated code may specialise for shapes it was compiled for, but must stay correct
// for any out_dims it is given (a dynamic batch dim changes only out_dims[0]).
#pragma once
#include <stdint.h>

extern "C" {

struct kiln_fused_args {
  const void* const* inputs;          // one per node input, element type as declared
  void* const* outputs;               // one per node output
  const int64_t* out_dims;            // [rank]
  const int64_t* const* in_strides;   // [num inputs][rank], in elements
  int32_t rank;
};

// Computes output elements [begin, end) in row-major order.
typedef void (*kiln_fused_fn)(const kiln_fused_args* args, int64_t begin, int64_t end);

}  // extern "C"
