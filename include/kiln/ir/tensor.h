// A dense, row-major tensor with concrete dims. Storage is shared and may be owned
// (64-byte aligned heap memory) or borrowed from a memory-mapped file (external data).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kiln/ir/dtype.h"
#include "kiln/ir/error.h"
#include "kiln/ir/shape.h"

namespace kiln {

class Buffer {
 public:
  virtual ~Buffer() = default;
  virtual void* data() = 0;
  virtual size_t size() const = 0;
  // Tells the OS this process no longer needs the whole pages inside [offset, offset + length)
  // (a mapped file's pages go back to the page cache); the bytes must not be read again.
  // A no-op for memory the process owns.
  virtual void release(size_t /*offset*/, size_t /*length*/) {}
};

// 64-byte aligned, zero-initialised heap memory.
std::shared_ptr<Buffer> make_owned_buffer(size_t bytes);
// Zero-initialised memory for a few large, long-lived blocks (weights, the activation arena):
// from 2 MiB up it is an anonymous mapping of its own (never reused heap pages), 2 MiB aligned
// and advised for transparent huge pages before its first touch, so that streaming it takes one
// TLB entry per 2 MiB instead of one per 4 KiB. Smaller requests are
// make_owned_buffer's. `zeroed` false leaves the bytes undefined and the pages untouched, for a
// caller that fills the block right away.
std::shared_ptr<Buffer> make_large_buffer(size_t bytes, bool zeroed = true);
// Maps [offset, offset+length) of a file read-only (copy-on-write private mapping).
// length == 0 means "to the end of the file". Throws kiln::Error naming the path.
std::shared_ptr<Buffer> map_file(const std::string& path, size_t offset = 0, size_t length = 0);

class Tensor {
 public:
  Tensor() = default;
  // Allocates zeroed storage.
  Tensor(DType dtype, std::vector<int64_t> dims);
  // Wraps existing storage (no copy).
  Tensor(DType dtype, std::vector<int64_t> dims, std::shared_ptr<Buffer> storage, size_t offset = 0);

  template <typename T>
  static Tensor from_vector(std::vector<int64_t> dims, const std::vector<T>& values) {
    Tensor t(dtype_of<T>(), std::move(dims));
    KILN_CHECK(static_cast<int64_t>(values.size()) == t.numel(), "tensor: ", values.size(),
               " values for ", t.numel(), " elements");
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }
  template <typename T>
  static Tensor scalar(T v) {
    return from_vector<T>({}, {v});
  }

  bool defined() const { return dtype_ != DType::undefined; }
  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(size_t i) const { return dims_[i]; }
  int64_t numel() const;
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() { return static_cast<char*>(storage_->data()) + offset_; }
  const void* raw() const { return static_cast<const char*>(storage_->data()) + offset_; }
  template <typename T>
  T* data() {
    check_type<T>();
    return static_cast<T*>(raw());
  }
  template <typename T>
  const T* data() const {
    check_type<T>();
    return static_cast<const T*>(raw());
  }

  // Same storage, new dims (numel must match).
  Tensor reshaped(std::vector<int64_t> dims) const;
  // Deep copy into fresh owned storage.
  Tensor clone() const;
  // Element i converted to double / int64 (any dtype; for shape computations, printing, tests).
  double as_double(int64_t i) const;
  int64_t as_int64(int64_t i) const;
  // All elements as int64 (for shape-like inputs: i32/i64).
  std::vector<int64_t> to_int64_vector() const;
  // Converts to another dtype (saturating casts follow C++ conversion for ints; float->f16/bf16 rounds to nearest even).
  Tensor cast(DType to) const;

  const std::shared_ptr<Buffer>& storage() const { return storage_; }

 private:
  template <typename T>
  void check_type() const {
    constexpr DType want = dtype_of<T>();
    // f16, bf16 and u16 all use uint16_t storage.
    KILN_CHECK(dtype_ == want || (std::is_same_v<T, uint16_t> && dtype_size(dtype_) == 2),
               "tensor: accessed ", dtype_name(dtype_), " data as ", dtype_name(want));
  }

  DType dtype_ = DType::undefined;
  std::vector<int64_t> dims_;
  std::shared_ptr<Buffer> storage_;
  size_t offset_ = 0;
};

}  // namespace kiln
