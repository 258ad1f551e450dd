// SHA-256 (FIPS 180-4) of a byte string, as 64 lowercase hex digits. Used for content-addressed
// caches (generated kernels); small enough that kiln needs no crypto library.
#pragma once
#include <string>
#include <string_view>

namespace kiln::codegen {

std::string sha256_hex(std::string_view data);

}  // namespace kiln::codegen
