// Element types of kiln tensors. One list, read by everything that names a dtype.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string_view>

namespace kiln {

// X(enum name, text name, C++ storage type, size in bytes)
#define KILN_DTYPES(X)             \
  X(f32, "f32", float, 4)          \
  X(f16, "f16", uint16_t, 2)       \
  X(bf16, "bf16", uint16_t, 2)     \
  X(f64, "f64", double, 8)         \
  X(i8, "i8", int8_t, 1)           \
  X(u8, "u8", uint8_t, 1)          \
  X(i16, "i16", int16_t, 2)        \
  X(u16, "u16", uint16_t, 2)       \
  X(i32, "i32", int32_t, 4)        \
  X(u32, "u32", uint32_t, 4)       \
  X(i64, "i64", int64_t, 8)        \
  X(u64, "u64", uint64_t, 8)       \
  X(boolean, "bool", bool, 1)

enum class DType : uint8_t {
  undefined = 0,
#define KILN_DT_ENUM(e, s, t, n) e,
  KILN_DTYPES(KILN_DT_ENUM)
#undef KILN_DT_ENUM
};

size_t dtype_size(DType t);          // bytes per element; 0 for undefined
std::string_view dtype_name(DType t);  // "f32", "bool", ... ; "undefined"
DType dtype_from_name(std::string_view s);  // DType::undefined if unknown
bool dtype_is_float(DType t);        // f32, f16, bf16, f64
bool dtype_is_integer(DType t);      // signed or unsigned ints (not bool)

// Maps a C++ type to its DType (for typed accessors).
template <typename T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }
template <> constexpr DType dtype_of<int16_t>() { return DType::i16; }
template <> constexpr DType dtype_of<uint16_t>() { return DType::u16; }  // also f16/bf16 storage
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<uint32_t>() { return DType::u32; }
template <> constexpr DType dtype_of<int64_t>() { return DType::i64; }
template <> constexpr DType dtype_of<uint64_t>() { return DType::u64; }
template <> constexpr DType dtype_of<bool>() { return DType::boolean; }

// Half-precision conversions (round to nearest even).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
inline float bf16_to_f32(uint16_t b) {
  uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
uint16_t f32_to_bf16(float f);

}  // namespace kiln
