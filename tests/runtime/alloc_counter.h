// Heap allocations through operator new so far in this test binary (alloc_counter.cpp).
#pragma once

namespace kiln::testing {
long allocation_count();
}  // namespace kiln::testing
