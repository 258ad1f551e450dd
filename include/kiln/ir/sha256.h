// SHA-256 (FIPS 180-4) as 64 lowercase hex digits: content hashes for source models, compile
// keys and the generated-kernel cache. Small enough that kiln needs no crypto library.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace kiln {

std::string sha256_hex(const void* data, size_t size);
std::string sha256_hex(std::string_view data);
// Streams the file; throws kiln::Error naming the path when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace kiln
