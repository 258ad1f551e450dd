// The compiled runtime's unit of work: one node bound to its tensors for one input shape, and
// the table of fast kernels that run a step instead of the op table's reference kernel.
//
// Adding a fast kernel is one file in src/runtime/ defining `FastKernel fast_<Name>()` and one
// line KILN_FAST_KERNEL(domain, Op, Name) in src/runtime/fast_kernels.inc. A kernel may decline a
// node (prepare returns false): the reference kernel then runs it, writing into the arena.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/kernels/pool.h"
#include "kiln/ops/kiln_ops.h"

namespace kiln::runtime {

class KernelLibrary;

struct StepContext {
  const Node* node = nullptr;
  int64_t opset = 0;                      // the model's ai.onnx opset
  std::vector<const Tensor*> inputs;      // bound before run; nullptr = omitted optional input
  std::vector<Tensor*> outputs;           // bound before run: final dtype and dims, in the arena or
                                          // an output buffer; nullptr = omitted optional output
  void* workspace = nullptr;              // workspace_bytes of arena scratch during run (64-aligned)
  int64_t workspace_bytes = 0;            // set by prepare when the kernel needs scratch
  int threads = 1;                        // set before every run
  int max_threads = 1;                    // the most `threads` will ever be (size scratch by it)
  const KernelLibrary* library = nullptr; // the artifact's generated kernels, if any
  std::shared_ptr<void> state;            // whatever prepare leaves for run
  // Constant bytes a later step reads once from memory (its FastKernel::cold_weights), which
  // this step's kernel fetches toward cache as it computes (FastKernel::fetches_ahead); set
  // when the steps are made (ShapeInstance, "Fetching ahead" in docs/runtime.md), nullptr = none.
  const void* warm = nullptr;
  int64_t warm_bytes = 0;
  const Node* warm_for = nullptr;  // the step that reads them

  const Tensor& in(size_t i) const { return *inputs[i]; }
  Tensor& out(size_t i) const { return *outputs[i]; }
};

struct FastKernel {
  // Called once per input shape before memory is planned. The node's values carry concrete
  // dtypes and shapes at that moment (read them from ctx.node); tensors are not bound yet.
  // Returns false to decline (the reference kernel runs the node). May set state and
  // workspace_bytes. nullptr accepts every node.
  bool (*prepare)(StepContext& ctx) = nullptr;
  // Computes ctx.outputs from ctx.inputs. Runs on every inference: must not allocate.
  void (*run)(StepContext& ctx) = nullptr;
  // Optional, read once the inputs are bound: the constant bytes run streams once from memory
  // with too little arithmetic to hide them (a GEMV's packed weights), or nullptr (bytes 0).
  const void* (*cold_weights)(const StepContext& ctx, int64_t& bytes) = nullptr;
  // Optional, after prepare: whether run's kernel fetches ctx.warm as it computes.
  bool (*fetches_ahead)(const StepContext& ctx) = nullptr;
};

// Whether steps fetch a later step's cold weights ahead (StepContext::warm). Starts as
// fetch_ahead_default(); KILN_FETCH_AHEAD=0 / =1 at start-up starts it off / on;
// set_fetch_ahead flips it between runs (A/B harnesses).
bool fetch_ahead_on();
void set_fetch_ahead(bool on);
// On, except on AMD family 1Ah (Zen 5), where it cost mobilenet_v2 1.002-1.011 of the time and
// efficientnet_b0 0.999-1.008 (in-process pairs) against 0.991-0.997 on Zen 4 (docs/runtime.md,
// "Fetching ahead").
bool fetch_ahead_default();

// nullptr when (domain, op) has no fast kernel; the first entry when it has several.
const FastKernel* find_fast_kernel(std::string_view domain, std::string_view op);
// Every fast kernel of (domain, op) in table order: the runtime uses the first that accepts a node.
std::vector<const FastKernel*> find_fast_kernels(std::string_view domain, std::string_view op);

// The fast pooling kernel's geometry (ops::pool_geometry).
using PoolGeometry = ops::PoolGeometry;
inline std::optional<PoolGeometry> fast_pool_geometry(const Node& n) { return ops::pool_geometry(n); }

}  // namespace kiln::runtime
