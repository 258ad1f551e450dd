#include "kiln/ir/dtype.h"

#include <cmath>

namespace kiln {

size_t dtype_size(DType t) {
  switch (t) {
#define KILN_DT_SIZE(e, s, ty, n) \
  case DType::e:                  \
    return n;
    KILN_DTYPES(KILN_DT_SIZE)
#undef KILN_DT_SIZE
    default:
      return 0;
  }
}

std::string_view dtype_name(DType t) {
  switch (t) {
#define KILN_DT_NAME(e, s, ty, n) \
  case DType::e:                  \
    return s;
    KILN_DTYPES(KILN_DT_NAME)
#undef KILN_DT_NAME
    default:
      return "undefined";
  }
}

DType dtype_from_name(std::string_view s) {
#define KILN_DT_PARSE(e, str, ty, n) \
  if (s == str) return DType::e;
  KILN_DTYPES(KILN_DT_PARSE)
#undef KILN_DT_PARSE
  return DType::undefined;
}

bool dtype_is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f64;
}

bool dtype_is_integer(DType t) {
  switch (t) {
    case DType::i8: case DType::u8: case DType::i16: case DType::u16:
    case DType::i32: case DType::u32: case DType::i64: case DType::u64:
      return true;
    default:
      return false;
  }
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400) == 0);
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (mant & 0x3ff) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = static_cast<uint16_t>((x >> 16) & 0x8000);
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) return sign | (absx > 0x7f800000u ? 0x7e00 : 0x7c00);  // nan / inf
  if (absx >= 0x477ff000u) return sign | 0x7c00;  // rounds to >= 65520: overflow to inf
  if (absx < 0x38800000u) {                     // below the smallest normal half: subnormal
    float a;
    std::memcpy(&a, &absx, 4);
    // scale so the half subnormal unit (2^-24) becomes 1, then round to nearest even
    float scaled = a * 16777216.0f;
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  uint32_t mant = absx & 0x7fffff;
  uint32_t exp = (absx >> 23) - 127 + 15;
  uint32_t half = exp << 10 | mant >> 13;
  uint32_t rest = mant & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) ++half;
  return sign | static_cast<uint16_t>(half);
}

uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // quiet nan
  u += 0x7fff + ((u >> 16) & 1);
  return static_cast<uint16_t>(u >> 16);
}

}  // namespace kiln
