// Output lines fetched for writing ahead of their stores, over the ISA's prefetch_for_write:
// included into each kernel file's ISA namespace (conv_tile.inl, avx512/depthwise_wide_avx512.cpp).

// Every line of floats [p, p + n), fetched for writing (the direct tiles' outputs, the depthwise
// pair kernels' and the 16-channel in-place kernel's rows).
inline void fetch_lines_for_write(const float* p, int64_t n) {
  const char* end = reinterpret_cast<const char*>(p + n);
  for (const char* q = reinterpret_cast<const char*>(p) - reinterpret_cast<uintptr_t>(p) % 64; q < end; q += 64)
    prefetch_for_write(q);
}
