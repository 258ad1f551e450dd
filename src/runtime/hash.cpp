// The section checksum (checksum.h).
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "checksum.h"
#include "kiln/ir/error.h"
#include "kiln/runtime/artifact.h"

namespace kiln {
namespace runtime {
namespace {

constexpr uint64_t kMul1 = 0x9FB21C651E98DF25ull, kMul2 = 0xC6A4A7935BD1E995ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}
inline uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= kMul1;
  h ^= h >> 29;
  h *= kMul2;
  h ^= h >> 32;
  return h;
}

}  // namespace

void Checksum::block(const unsigned char* p) {
  for (int i = 0; i < 4; ++i) lane_[i] = rotl(lane_[i] + load64(p + 8 * i) * kMul2, 31) * kMul1;
}

void Checksum::update(const void* data, size_t size) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  total_ += size;
  if (tail_size_ > 0) {
    size_t take = std::min(size, sizeof tail_ - tail_size_);
    std::memcpy(tail_ + tail_size_, p, take);
    tail_size_ += take;
    p += take;
    size -= take;
    if (tail_size_ < sizeof tail_) return;
    block(tail_);
    tail_size_ = 0;
  }
  for (; size >= 32; p += 32, size -= 32) block(p);
  std::memcpy(tail_, p, size);
  tail_size_ = size;
}

uint64_t Checksum::digest() const {
  uint64_t h = total_ * kMul1;
  for (int i = 0; i < 4; ++i) h = mix(h ^ rotl(lane_[i], 7 * i + 1));
  for (size_t i = 0; i < tail_size_; ++i) h = (h ^ tail_[i]) * kMul2;
  return mix(h);
}

}  // namespace runtime

}  // namespace kiln
