// kiln.FusedElementwise through the generated library (include/kiln/codegen/fused_abi.h): the
// symbol named by the node's `kernel` attribute is resolved once per shape, the broadcast
// strides of every input computed once, and each run calls it over ranges of the output.
#include "kiln/codegen/fused_abi.h"
#include "kiln/kernels/parallel.h"
#include "kiln/runtime/kernel_library.h"
#include "kiln/runtime/step.h"

namespace kiln::runtime {
namespace {

struct Fused {
  kiln_fused_fn fn = nullptr;
  std::vector<int64_t> out_dims;
  std::vector<std::vector<int64_t>> strides;  // per input, per output dim (0 = broadcast)
  std::vector<const int64_t*> stride_ptrs;
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  kiln_fused_args args{};
  int64_t numel = 0;
};

bool prepare(StepContext& ctx) {
  const Node& node = *ctx.node;
  const std::string symbol = node.attr_s("kernel", "");
  if (symbol.empty() || ctx.library == nullptr) return false;
  auto f = std::make_shared<Fused>();
  for (const Value* o : node.outputs) {
    if (!o) continue;
    if (!o->shape.is_static()) return false;
    std::vector<int64_t> d = o->shape.static_dims();
    if (f->out_ptrs.empty()) f->out_dims = d;
    else if (d != f->out_dims) return false;  // the ABI wants every output the same shape
    f->out_ptrs.push_back(nullptr);
  }
  if (f->out_ptrs.empty()) return false;
  const size_t rank = f->out_dims.size();
  for (const Value* x : node.inputs) {
    if (!x || !x->shape.is_static()) return false;
    std::vector<int64_t> d = x->shape.static_dims();
    if (d.size() > rank) return false;
    std::vector<int64_t> st(rank, 0);
    int64_t stride = 1;
    for (size_t k = 0; k < d.size(); ++k) {
      size_t in_axis = d.size() - 1 - k, out_axis = rank - 1 - k;
      if (d[in_axis] != 1 && d[in_axis] != f->out_dims[out_axis]) return false;
      st[out_axis] = d[in_axis] == 1 ? 0 : stride;
      stride *= d[in_axis];
    }
    f->strides.push_back(std::move(st));
    f->in_ptrs.push_back(nullptr);
  }
  for (const auto& st : f->strides) f->stride_ptrs.push_back(st.data());
  f->fn = reinterpret_cast<kiln_fused_fn>(ctx.library->symbol(symbol));
  f->numel = numel_of(f->out_dims);
  f->args.inputs = f->in_ptrs.data();
  f->args.outputs = f->out_ptrs.data();
  f->args.out_dims = f->out_dims.data();
  f->args.in_strides = f->stride_ptrs.data();
  f->args.rank = static_cast<int32_t>(rank);
  ctx.state = f;
  return true;
}

void run(StepContext& ctx) {
  Fused& f = *static_cast<Fused*>(ctx.state.get());
  for (size_t i = 0; i < f.in_ptrs.size(); ++i) f.in_ptrs[i] = ctx.inputs[i]->raw();
  for (size_t k = 0, j = 0; k < ctx.outputs.size(); ++k)
    if (ctx.outputs[k]) f.out_ptrs[j++] = ctx.outputs[k]->raw();
  const int threads = kernels::threads_for_pass(static_cast<double>(f.numel), ctx.threads);
  const Fused* fp = &f;
  kernels::parallel_for(f.numel, threads, [fp](int64_t b, int64_t e) { fp->fn(&fp->args, b, e); });
}

}  // namespace

FastKernel fast_FusedElementwise() { return FastKernel{prepare, run}; }

}  // namespace kiln::runtime
