// Transpose, Slice, Split and Expand straight into the arena. Their strided views (kiln/ops/views.h,
// the functions their reference kernels use) are worked out once per input shape, and output
// dims that are contiguous in the input too are merged (longer memcpys). The reference kernels
// rebuilt the views and a KernelContext on every run: about 20 heap allocations per op, ~1800
// per BERT-base run from its attention's Slices and Transposes, ~180 per GPT-2 run from Splits.
// Expand (a view with stride 0 along the broadcast dims) needs its shape input known here.
// Large copies split the outermost dim over threads (kernels::strided_copy_threads, as the
// reference kernels' copy_view). A copy: bit-identical.
#include <memory>
#include <optional>
#include <vector>

#include "kiln/kernels/strided_copy.h"
#include "kiln/ops/views.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct Copy {
  int64_t offset = 0, numel = 1;
  std::vector<int64_t> dims, strides;  // merged: no size-1 dims, no two that could be one
  size_t elem = 0;
};

// The copy of view v of an input whose elements are `elem` bytes.
Copy merged(const ops::StridedView& v, size_t elem) {
  const ops::StridedView m = ops::merged_view(v);
  Copy c;
  c.offset = m.offset, c.dims = m.dims, c.strides = m.strides, c.elem = elem;
  for (int64_t dim : v.dims) c.numel *= dim;
  return c;
}

// One copy per output (nothing for an omitted optional output).
struct Copies {
  std::vector<Copy> outputs;
};

bool prepare(StepContext& ctx) {
  const Node& node = *ctx.node;
  const Value* x = node.input(0);
  if (!x || !x->shape.is_static() || node.outputs.empty()) return false;
  const size_t elem = dtype_size(x->dtype);
  if (elem != 1 && elem != 2 && elem != 4 && elem != 8) return false;
  const std::vector<int64_t> dims = x->shape.static_dims();
  auto input = [&node](size_t i) -> const Tensor* {
    const Value* in = node.input(i);
    return in && in->is_constant() ? &*in->initializer : nullptr;
  };
  auto has = [&node](size_t i) { return node.input(i) != nullptr; };
  std::vector<ops::StridedView> views;
  // Bad parameters (an exception) or ones computed at run time decline: the reference kernel
  // then runs the node, with its message.
  try {
    if (node.op == "Transpose") {
      views.push_back(ops::transpose_view(node, dims));
    } else if (node.op == "Expand") {
      if (!input(1)) return false;
      views.push_back(ops::expand_view(node, dims, input(1)->to_int64_vector()));
    } else if (node.op == "Slice") {
      auto v = ops::slice_view(node, ctx.opset, dims, input, has);
      if (!v) return false;
      views.push_back(*v);
    } else {
      if (has(1) && !input(1)) return false;
      views = ops::split_views(node, ctx.opset, dims, input(1), node.outputs.size());
    }
  } catch (const std::exception&) {
    return false;
  }
  auto c = std::make_shared<Copies>();
  for (size_t i = 0; i < views.size(); ++i)
    c->outputs.push_back(node.outputs[i] ? merged(views[i], elem) : Copy{});
  ctx.state = c;
  return true;
}

template <typename T>
void copy(const Copy& c, const void* src, void* dst, int threads) {
  kernels::strided_copy_threads<T>(static_cast<const T*>(src), c.offset, c.strides.data(), c.dims.data(), c.dims.size(),
                                   static_cast<T*>(dst), threads);
}

void run(StepContext& ctx) {
  const Copies& copies = *static_cast<const Copies*>(ctx.state.get());
  const void* x = ctx.in(0).raw();
  for (size_t i = 0; i < copies.outputs.size(); ++i) {
    const Copy& c = copies.outputs[i];
    if (c.numel == 0 || !ctx.outputs[i]) continue;
    void* y = ctx.out(i).raw();
    switch (c.elem) {
      case 1: copy<uint8_t>(c, x, y, ctx.threads); break;
      case 2: copy<uint16_t>(c, x, y, ctx.threads); break;
      case 4: copy<uint32_t>(c, x, y, ctx.threads); break;
      default: copy<uint64_t>(c, x, y, ctx.threads); break;
    }
  }
}

}  // namespace

FastKernel fast_Strided() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime
