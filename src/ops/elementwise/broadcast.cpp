#include "elementwise/broadcast.h"

namespace kiln::ops {

BroadcastPlan plan_broadcast(const std::vector<const std::vector<int64_t>*>& ins, const Node& node) {
  BroadcastPlan p;
  p.operands = static_cast<int>(ins.size());
  KILN_CHECK(p.operands >= 1 && p.operands <= BroadcastPlan::kMaxOperands, node.describe(),
             ": internal: bad operand count for broadcast");
  p.out_dims = *ins[0];
  for (size_t k = 1; k < ins.size(); ++k) p.out_dims = broadcast_dims(p.out_dims, *ins[k], node);
  p.numel = numel_of(p.out_dims);
  const size_t r = p.out_dims.size();

  // Per operand: element strides aligned to the output rank, 0 where it broadcasts.
  std::vector<std::vector<int64_t>> full(ins.size(), std::vector<int64_t>(r, 0));
  for (size_t k = 0; k < ins.size(); ++k) {
    const auto& d = *ins[k];
    std::vector<int64_t> st = strides_of(d);
    size_t lead = r - d.size();
    for (size_t i = 0; i < d.size(); ++i) full[k][lead + i] = d[i] == 1 ? 0 : st[i];
  }
  // Drop size-1 output dims, then merge dim i into the previous kept one when every
  // operand's stride there equals stride(i) * dim(i) (contiguous, or broadcast in both).
  for (size_t i = 0; i < r; ++i) {
    if (p.out_dims[i] == 1) continue;
    bool merge = !p.dims.empty();
    for (int k = 0; k < p.operands && merge; ++k)
      merge = p.strides[k].back() == full[k][i] * p.out_dims[i];
    if (merge) {
      p.dims.back() *= p.out_dims[i];
      for (int k = 0; k < p.operands; ++k) p.strides[k].back() = full[k][i];
    } else {
      p.dims.push_back(p.out_dims[i]);
      for (int k = 0; k < p.operands; ++k) p.strides[k].push_back(full[k][i]);
    }
  }
  if (p.dims.empty()) {  // scalar output
    p.dims.push_back(1);
    for (int k = 0; k < p.operands; ++k) p.strides[k].push_back(0);
  }
  return p;
}

}  // namespace kiln::ops
