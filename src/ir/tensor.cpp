#include "kiln/ir/tensor.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <limits>

namespace kiln {
namespace {

constexpr size_t kHugePage = size_t{2} << 20;

// 64-byte aligned heap memory.
class OwnedBuffer : public Buffer {
 public:
  explicit OwnedBuffer(size_t bytes, bool zeroed = true) : size_(bytes) {
    const size_t rounded = std::max<size_t>((bytes + 63) / 64 * 64, 64);
    data_ = std::aligned_alloc(64, rounded);
    KILN_CHECK(data_ != nullptr, "out of memory allocating ", bytes, " bytes");
    if (zeroed) std::memset(data_, 0, rounded);
  }
  ~OwnedBuffer() override { std::free(data_); }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_;
  size_t size_;
};

// A mapping of its own, 2 MiB aligned and advised for transparent huge pages before any page is
// touched. Not the heap's: glibc serves even a 400 MB aligned_alloc from the top of the heap
// when a compile has just freed that much, and those pages were already touched as 4 KiB pages,
// which the advice does not change (only khugepaged, later and piece by piece). On the Zen 5
// host that left bert_base's weights in 4 KiB pages after an in-process compile, and its GEMMs
// ran up to 2x slower than on the same weights loaded from the artifact (110 of 441 MB in huge
// pages against 430).
class HugePageBuffer : public Buffer {
 public:
  HugePageBuffer(size_t bytes, bool zeroed) : size_(bytes), mapped_(to_huge_pages(bytes)) {
    // Over-map by one huge page and trim both ends, so the start is 2 MiB aligned.
    const size_t reserve = mapped_ + kHugePage;
    void* p = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    KILN_CHECK(p != MAP_FAILED, "out of memory mapping ", bytes, " bytes: ", std::strerror(errno));
    const uintptr_t start = reinterpret_cast<uintptr_t>(p), aligned = to_huge_pages(start);
    if (aligned > start) munmap(p, aligned - start);
    if (const size_t tail = start + reserve - (aligned + mapped_); tail > 0)
      munmap(reinterpret_cast<void*>(aligned + mapped_), tail);
    data_ = reinterpret_cast<void*>(aligned);
#ifdef MADV_HUGEPAGE
    madvise(data_, mapped_, MADV_HUGEPAGE);  // advice: without it (or with THP off), 4 KiB pages
#endif
    // The pages are zero already; writing them faults them in now rather than in the first run.
    if (zeroed) std::memset(data_, 0, mapped_);
  }
  ~HugePageBuffer() override { munmap(data_, mapped_); }
  static size_t to_huge_pages(size_t x) { return (x + kHugePage - 1) / kHugePage * kHugePage; }
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_, mapped_;
};

class MappedBuffer : public Buffer {
 public:
  MappedBuffer(void* base, size_t map_len, size_t skip, size_t len)
      : base_(base), map_len_(map_len), skip_(skip), len_(len) {}
  ~MappedBuffer() override {
    if (base_ != nullptr) munmap(base_, map_len_);
  }
  void* data() override { return static_cast<char*>(base_) + skip_; }
  size_t size() const override { return len_; }
  void release(size_t offset, size_t length) override {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
    const size_t begin = (skip_ + offset + page - 1) / page * page, end = (skip_ + offset + length) / page * page;
    if (end > begin) madvise(static_cast<char*>(base_) + begin, end - begin, MADV_DONTNEED);
  }

 private:
  void* base_;
  size_t map_len_, skip_, len_;
};

}  // namespace

std::shared_ptr<Buffer> make_owned_buffer(size_t bytes) { return std::make_shared<OwnedBuffer>(bytes); }

std::shared_ptr<Buffer> make_large_buffer(size_t bytes, bool zeroed) {
  if (bytes >= kHugePage) return std::make_shared<HugePageBuffer>(bytes, zeroed);
  return std::make_shared<OwnedBuffer>(bytes, zeroed);
}

std::shared_ptr<Buffer> map_file(const std::string& path, size_t offset, size_t length) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  KILN_CHECK(fd >= 0, path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    ::close(fd);
    throw Error(str_cat(path, ": cannot stat: ", std::strerror(errno)));
  }
  size_t file_size = static_cast<size_t>(st.st_size);
  if (offset > file_size || (length != 0 && length > file_size - offset)) {
    ::close(fd);
    throw Error(str_cat(path, ": range [", offset, ", ", offset + length, ") is past the end of the file (",
                        file_size, " bytes)"));
  }
  if (length == 0) length = file_size - offset;
  if (length == 0) {
    ::close(fd);
    return make_owned_buffer(0);
  }
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t aligned = offset / page * page;
  size_t skip = offset - aligned;
  void* p = mmap(nullptr, length + skip, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, static_cast<off_t>(aligned));
  ::close(fd);
  KILN_CHECK(p != MAP_FAILED, path, ": mmap failed: ", std::strerror(errno));
  return std::make_shared<MappedBuffer>(p, length + skip, skip, length);
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  for (auto d : dims_) KILN_CHECK(d >= 0, "tensor: negative dim in ", dims_str(dims_));
  storage_ = make_owned_buffer(nbytes());
}

Tensor::Tensor(DType dtype, std::vector<int64_t> dims, std::shared_ptr<Buffer> storage, size_t offset)
    : dtype_(dtype), dims_(std::move(dims)), storage_(std::move(storage)), offset_(offset) {
  for (auto d : dims_) KILN_CHECK(d >= 0, "tensor: negative dim in ", dims_str(dims_));
  KILN_CHECK(storage_ && storage_->size() >= offset_ + nbytes(), "tensor: storage of ",
             storage_ ? storage_->size() : 0, " bytes is too small for ", dtype_name(dtype_), dims_str(dims_));
}

int64_t Tensor::numel() const { return numel_of(dims_); }

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  KILN_CHECK(numel_of(dims) == numel(), "tensor: cannot reshape ", dims_str(dims_), " to ", dims_str(dims));
  return Tensor(dtype_, std::move(dims), storage_, offset_);
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, dims_);
  if (nbytes() != 0) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

double Tensor::as_double(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::f64: return static_cast<const double*>(p)[i];
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::i8: return static_cast<const int8_t*>(p)[i];
    case DType::u8: return static_cast<const uint8_t*>(p)[i];
    case DType::i16: return static_cast<const int16_t*>(p)[i];
    case DType::u16: return static_cast<const uint16_t*>(p)[i];
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    case DType::i64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case DType::u64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case DType::boolean: return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
    default: throw Error("tensor: element of undefined dtype");
  }
}

int64_t Tensor::as_int64(int64_t i) const {
  const void* p = raw();
  switch (dtype_) {
    case DType::i64: return static_cast<const int64_t*>(p)[i];
    case DType::u64: return static_cast<int64_t>(static_cast<const uint64_t*>(p)[i]);
    case DType::i32: return static_cast<const int32_t*>(p)[i];
    case DType::u32: return static_cast<const uint32_t*>(p)[i];
    default: return static_cast<int64_t>(as_double(i));
  }
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> v(static_cast<size_t>(numel()));
  for (int64_t i = 0; i < numel(); ++i) v[i] = as_int64(i);
  return v;
}

namespace {
template <typename To>
void cast_into(const Tensor& src, To* dst) {
  int64_t n = src.numel();
  DType st = src.dtype();
  if (st == DType::i64 || st == DType::u64 || st == DType::i32 || st == DType::u32) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<To>(src.as_int64(i));
  } else {
    for (int64_t i = 0; i < n; ++i) {
      double v = src.as_double(i);
      if constexpr (std::is_integral_v<To> && !std::is_same_v<To, bool>) {
        // Float to int: truncate toward zero; NaN becomes 0 rather than undefined behaviour.
        if (std::isnan(v)) v = 0;
        if (v >= static_cast<double>(std::numeric_limits<To>::max())) { dst[i] = std::numeric_limits<To>::max(); continue; }
        if (v <= static_cast<double>(std::numeric_limits<To>::lowest())) { dst[i] = std::numeric_limits<To>::lowest(); continue; }
      }
      dst[i] = static_cast<To>(v);
    }
  }
}
}  // namespace

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return clone();
  Tensor out(to, dims_);
  int64_t n = numel();
  switch (to) {
    case DType::f32: cast_into(*this, out.data<float>()); break;
    case DType::f64: cast_into(*this, out.data<double>()); break;
    case DType::f16:
      for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = f32_to_f16(static_cast<float>(as_double(i)));
      break;
    case DType::bf16:
      for (int64_t i = 0; i < n; ++i) out.data<uint16_t>()[i] = f32_to_bf16(static_cast<float>(as_double(i)));
      break;
    case DType::i8: cast_into(*this, out.data<int8_t>()); break;
    case DType::u8: cast_into(*this, out.data<uint8_t>()); break;
    case DType::i16: cast_into(*this, out.data<int16_t>()); break;
    case DType::u16: cast_into(*this, out.data<uint16_t>()); break;
    case DType::i32: cast_into(*this, out.data<int32_t>()); break;
    case DType::u32: cast_into(*this, out.data<uint32_t>()); break;
    case DType::i64: cast_into(*this, out.data<int64_t>()); break;
    case DType::u64: cast_into(*this, out.data<uint64_t>()); break;
    case DType::boolean:
      for (int64_t i = 0; i < n; ++i) out.data<bool>()[i] = as_double(i) != 0.0;
      break;
    default: throw Error("tensor: cast to undefined dtype");
  }
  return out;
}

}  // namespace kiln
