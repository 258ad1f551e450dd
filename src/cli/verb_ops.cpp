// kiln ops: the op table (what kiln can import and run).
#include <cstdio>

#include "args.h"
#include "kiln/ops/op.h"
#include "verbs.h"

namespace kiln::cli {

int verb_ops(int argc, char** argv) {
  Args a("ops", argc, argv, {}, {});
  int complete = 0;
  for (const ops::OpDef* d : ops::all_ops()) {
    bool full = d->infer && d->kernel;
    complete += full;
    std::string name = d->domain.empty() ? std::string(d->name) : std::string(d->domain) + "." + std::string(d->name);
    std::printf("%-26s since %-3lld %s%s\n", name.c_str(), static_cast<long long>(d->since),
                full ? "" : "[declared only: no reference kernel] ", std::string(d->doc).c_str());
  }
  std::printf("%zu ops, %d with shape inference and a reference kernel; ai.onnx opsets %lld..%lld\n",
              ops::all_ops().size(), complete, static_cast<long long>(ops::kMinOpset),
              static_cast<long long>(ops::kMaxOpset));
  return 0;
}

}  // namespace kiln::cli
