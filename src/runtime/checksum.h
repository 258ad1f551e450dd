// A fast 64-bit checksum for artifact sections: catches truncation and flipped bytes (it is not
// a cryptographic hash). Four independent multiply-rotate lanes over 32-byte blocks run at
// several GB/s, so checking the weights of a large model at load costs little next to reading them.
#pragma once
#include <cstddef>
#include <cstdint>

namespace kiln::runtime {

class Checksum {
 public:
  void update(const void* data, size_t size);
  uint64_t digest() const;

 private:
  void block(const unsigned char* p);
  uint64_t lane_[4] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull};
  unsigned char tail_[32] = {};
  size_t tail_size_ = 0;
  uint64_t total_ = 0;
};

inline uint64_t checksum64(const void* data, size_t size) {
  Checksum c;
  c.update(data, size);
  return c.digest();
}

}  // namespace kiln::runtime
