// The byte layout of model.kiln (docs/artifact.md), shared by the writer and the reader.
//
//   offset 0   header, 64 bytes, little-endian:
//                0  magic (8)            kArtifactMagic
//                8  u32 format version   kArtifactFormatVersion
//               12  u32 section count
//               16  u64 table offset     (64)
//               24  u64 file size        (truncation shows as a mismatch)
//               32  u64 table checksum   (of the section table's bytes)
//               40  u64 header checksum  (of bytes 0..40)
//               48  16 bytes of zeros
//   offset 64  section table: per section 64 bytes: name (32, NUL-padded), u64 offset,
//              u64 size, u64 checksum (of the section's bytes), u64 zero
//   then the sections, each at a multiple of 4096.
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "kiln/ir/graph.h"
#include "kiln/plan/json.h"
#include "kiln/runtime/executable.h"

namespace kiln::runtime::format {

constexpr size_t kHeaderBytes = 64;
constexpr size_t kEntryBytes = 64;
constexpr size_t kNameBytes = 32;
constexpr size_t kSectionAlign = 4096;
constexpr size_t kTensorAlign = 64;
constexpr uint32_t kMaxSections = 64;

constexpr std::string_view kManifest = "manifest.json";
constexpr std::string_view kGraph = "graph.kir";
constexpr std::string_view kWeightIndex = "weights.json";
constexpr std::string_view kWeights = "weights.bin";
constexpr std::string_view kKernels = "kernels.so";
constexpr std::string_view kPlan = "plan.json";

inline void put_u32(unsigned char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline void put_u64(unsigned char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<unsigned char>(v >> (8 * i));
}
inline uint32_t get_u32(const unsigned char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t{p[i]} << (8 * i);
  return v;
}
inline uint64_t get_u64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{p[i]} << (8 * i);
  return v;
}
inline uint64_t align_up(uint64_t x, uint64_t a) { return (x + a - 1) / a * a; }

// A tensor whose bytes live in weights.bin: an initializer or a tensor attribute of a node,
// in this graph or (recursively) its subgraphs. The writer and the reader walk the graph in
// the same order, so the index is matched by position and checked by key.
struct StoredTensor {
  std::string key;     // "init:<value>" or "attr:<node>:<attribute>"
  Value* value = nullptr;
  Node* node = nullptr;
  std::string attr;
  const Tensor& tensor() const;
  void replace(Tensor t) const;
};
std::vector<StoredTensor> stored_tensors(Graph& g);

json::Value manifest_to_json(const ArtifactManifest& m);
// Throws naming `what` ("model.kiln: manifest.json") on a missing or mistyped field.
ArtifactManifest manifest_from_json(const json::Value& j, const std::string& what);

}  // namespace kiln::runtime::format
