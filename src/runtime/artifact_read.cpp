// Reading model.kiln: every check fails with one line naming the file (docs/artifact.md).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "artifact_format.h"
#include "checksum.h"
#include "kiln/ir/text.h"
#include "kiln/runtime/artifact.h"

namespace kiln {
namespace {

using namespace runtime::format;

std::string_view section_bytes(const LoadedArtifact& a, std::string_view name) {
  for (const ArtifactSection& s : a.sections)
    if (s.name == name) return {static_cast<const char*>(a.file->data()) + s.offset, s.size};
  return {};
}

bool has_section(const LoadedArtifact& a, std::string_view name) {
  for (const ArtifactSection& s : a.sections)
    if (s.name == name) return true;
  return false;
}

void read_sections(LoadedArtifact& a, const std::string& path) {
  const auto* base = static_cast<const unsigned char*>(a.file->data());
  const uint64_t size = a.file->size();
  const std::string not_artifact = str_cat(path, ": not a kiln artifact (no kiln magic at the start of the file)");
  KILN_CHECK(size >= kArtifactMagic.size() && std::memcmp(base, kArtifactMagic.data(), kArtifactMagic.size()) == 0,
             not_artifact);
  KILN_CHECK(size >= kHeaderBytes, path, ": truncated artifact (", size, " bytes, shorter than its header)");
  const uint32_t version = get_u32(base + 8);
  KILN_CHECK(version == kArtifactFormatVersion, path, ": artifact format version ", version, ", but this kiln (",
             kiln_version(), ") reads version ", kArtifactFormatVersion, "; compile the model again with this kiln");
  bool reserved_zero = get_u64(base + 48) == 0 && get_u64(base + 56) == 0;
  KILN_CHECK(get_u64(base + 40) == runtime::checksum64(base, 40) && reserved_zero, path,
             ": corrupt artifact (header checksum mismatch)");
  const uint64_t file_size = get_u64(base + 24);
  KILN_CHECK(file_size == size, path, ": truncated or corrupt artifact (", size, " bytes, the header says ", file_size,
             ")");
  const uint32_t count = get_u32(base + 12);
  const uint64_t table = get_u64(base + 16);
  KILN_CHECK(count <= kMaxSections && table >= kHeaderBytes && table + uint64_t{count} * kEntryBytes <= size, path,
             ": corrupt artifact (section table out of bounds)");
  KILN_CHECK(get_u64(base + 32) == runtime::checksum64(base + table, count * kEntryBytes), path,
             ": corrupt artifact (section table checksum mismatch)");
  for (uint32_t i = 0; i < count; ++i) {
    const unsigned char* e = base + table + uint64_t{i} * kEntryBytes;
    ArtifactSection s;
    s.name.assign(reinterpret_cast<const char*>(e), strnlen(reinterpret_cast<const char*>(e), kNameBytes));
    s.offset = get_u64(e + kNameBytes);
    s.size = get_u64(e + kNameBytes + 8);
    s.checksum = get_u64(e + kNameBytes + 16);
    KILN_CHECK(s.offset <= size && s.size <= size - s.offset, path, ": corrupt artifact (section '", s.name,
               "' lies past the end of the file)");
    KILN_CHECK(runtime::checksum64(base + s.offset, s.size) == s.checksum, path, ": corrupt artifact (section '",
               s.name, "' checksum mismatch)");
    a.sections.push_back(std::move(s));
  }
  for (std::string_view required : {kManifest, kGraph, kWeightIndex, kWeights})
    KILN_CHECK(has_section(a, required), path, ": corrupt artifact (no section '", required, "')");
}

// Points every initializer and tensor attribute at its bytes in weights.bin: in the mapped file,
// or in one copy of the section (WeightMemory::copied).
void attach_weights(LoadedArtifact& a, const std::string& path, WeightMemory memory) {
  const std::string what = path + ": " + std::string(kWeightIndex);
  json::Value index = json::parse(section_bytes(a, kWeightIndex), what);
  const json::Array& entries = index.at("tensors", what).as_array(what + ": tensors");
  std::vector<StoredTensor> stored = stored_tensors(*a.model.graph);
  KILN_CHECK(entries.size() == stored.size(), what, ": ", entries.size(), " tensors, the graph has ", stored.size());
  const ArtifactSection* weights = nullptr;
  for (const ArtifactSection& s : a.sections)
    if (s.name == kWeights) weights = &s;
  if (memory == WeightMemory::copied) {
    // Into untouched pages, chunk by chunk, each released from the mapping once copied: the
    // process holds the weights about once, not twice (bert_base's peak RSS 466 MB against 441
    // mapped; 859 when the block was zeroed before the copy).
    constexpr uint64_t kChunk = uint64_t{32} << 20;
    a.weights = make_large_buffer(weights->size, false);
    for (uint64_t at = 0; at < weights->size; at += kChunk) {
      const uint64_t n = std::min(kChunk, weights->size - at);
      std::memcpy(static_cast<char*>(a.weights->data()) + at,
                  static_cast<const char*>(a.file->data()) + weights->offset + at, n);
      a.file->release(weights->offset + at, n);
    }
  }
  // Where weights.bin's byte 0 is: the copy's start, or the section's offset in the file.
  const std::shared_ptr<Buffer>& bytes_of = a.weights ? a.weights : a.file;
  const uint64_t base = a.weights ? 0 : weights->offset;
  for (size_t i = 0; i < stored.size(); ++i) {
    const json::Value& e = entries[i];
    const std::string& key = e.at("key", what).as_string(what + ": key");
    KILN_CHECK(key == stored[i].key, what, ": entry ", i, " is '", key, "', the graph expects '", stored[i].key, "'");
    const std::string ew = what + ": " + key;
    DType dt = dtype_from_name(e.at("dtype", ew).as_string(ew));
    std::vector<int64_t> dims;
    for (const json::Value& d : e.at("dims", ew).as_array(ew)) dims.push_back(d.as_int(ew));
    const Tensor& parsed = stored[i].tensor();
    KILN_CHECK(dt == parsed.dtype() && dims == parsed.dims(), ew, ": index says ", dtype_name(dt), dims_str(dims),
               ", the graph says ", dtype_name(parsed.dtype()), dims_str(parsed.dims()));
    const int64_t offset = e.at("offset", ew).as_int(ew), bytes = e.at("bytes", ew).as_int(ew);
    KILN_CHECK(offset >= 0 && bytes == static_cast<int64_t>(parsed.nbytes()) &&
                   static_cast<uint64_t>(offset + bytes) <= weights->size,
               ew, ": bytes [", offset, ", ", offset + bytes, ") lie outside weights.bin (", weights->size, " bytes)");
    stored[i].replace(Tensor(dt, std::move(dims), bytes_of, base + static_cast<uint64_t>(offset)));
  }
}

}  // namespace

bool is_artifact_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char head[8] = {};
  ssize_t n = ::read(fd, head, sizeof head);
  ::close(fd);
  return n == static_cast<ssize_t>(sizeof head) && std::string_view(head, sizeof head) == kArtifactMagic;
}

ArtifactManifest read_artifact_manifest(const std::string& path) {
  LoadedArtifact a;
  a.file = map_file(path);
  read_sections(a, path);
  const std::string mwhat = path + ": " + std::string(kManifest);
  return manifest_from_json(json::parse(section_bytes(a, kManifest), mwhat), mwhat);
}

WeightMemory weight_memory_to_run() {
  const char* v = std::getenv("KILN_MMAP_WEIGHTS");
  return v && std::string_view(v) == "1" ? WeightMemory::mapped : WeightMemory::copied;
}

LoadedArtifact read_artifact(const std::string& path, bool check_isa, WeightMemory weights) {
  LoadedArtifact a;
  a.file = map_file(path);
  read_sections(a, path);
  const std::string mwhat = path + ": " + std::string(kManifest);
  a.manifest = manifest_from_json(json::parse(section_bytes(a, kManifest), mwhat), mwhat);
  KILN_CHECK(a.manifest.format_version == kArtifactFormatVersion, path, ": manifest says format version ",
             a.manifest.format_version, ", but this kiln reads version ", kArtifactFormatVersion,
             "; compile the model again with this kiln");
  try {
    isa_runs_on(a.manifest.target_isa, "scalar");  // a known name?
  } catch (const Error& e) {
    throw Error(str_cat(path, ": ", e.what()));
  }
  if (check_isa) check_artifact_isa(path, a.manifest.target_isa, host_isa());
  try {
    a.model = parse_model(std::string(section_bytes(a, kGraph)));
  } catch (const Error& e) {
    throw Error(str_cat(path, ": graph.kir: ", e.what()));
  }
  a.model.source_path = path;
  attach_weights(a, path, weights);
  a.kernel_library = section_bytes(a, kKernels);
  a.plan_json = std::string(section_bytes(a, kPlan));
  return a;
}

}  // namespace kiln
