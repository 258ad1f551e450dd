// The fast-kernel table, built from fast_kernels.inc.
#include <vector>

#include "kiln/runtime/step.h"

namespace kiln::runtime {

#define KILN_FAST_KERNEL(domain, op, Name) FastKernel fast_##Name();
#include "fast_kernels.inc"
#undef KILN_FAST_KERNEL

namespace {

struct Entry {
  std::string_view domain, op;
  FastKernel kernel;
};

const std::vector<Entry>& table() {
  static const std::vector<Entry> t = {
#define KILN_FAST_KERNEL(domain, op, Name) Entry{domain, #op, fast_##Name()},
#include "fast_kernels.inc"
#undef KILN_FAST_KERNEL
  };
  return t;
}

}  // namespace

const FastKernel* find_fast_kernel(std::string_view domain, std::string_view op) {
  for (const Entry& e : table())
    if (e.domain == domain && e.op == op) return &e.kernel;
  return nullptr;
}

std::vector<const FastKernel*> find_fast_kernels(std::string_view domain, std::string_view op) {
  std::vector<const FastKernel*> out;
  for (const Entry& e : table())
    if (e.domain == domain && e.op == op) out.push_back(&e.kernel);
  return out;
}

}  // namespace kiln::runtime
