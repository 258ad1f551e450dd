// Writing model.kiln: sections streamed into a temporary file next to the target, the header
// and section table written last, fsync, then an atomic rename (docs/artifact.md).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>

#include "artifact_format.h"
#include "checksum.h"
#include "kiln/ir/text.h"
#include "kiln/runtime/artifact.h"

namespace kiln {
namespace {

using namespace runtime::format;

// Appends to a file descriptor, keeping the position and a checksum of the current section.
class FileWriter {
 public:
  FileWriter(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    sum_.update(p, n);
    pos_ += n;
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw Error(str_cat(path_, ": cannot write: ", std::strerror(errno)));
      p += w;
      n -= static_cast<size_t>(w);
    }
  }
  void pad_to(uint64_t alignment) {
    static const char zeros[kSectionAlign] = {};
    while (pos_ % alignment != 0) write(zeros, std::min<uint64_t>(alignment - pos_ % alignment, sizeof zeros));
  }
  void pwrite_at(const void* data, size_t n, uint64_t offset) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(offset));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) throw Error(str_cat(path_, ": cannot write: ", std::strerror(errno)));
      p += w;
      n -= static_cast<size_t>(w);
      offset += static_cast<uint64_t>(w);
    }
  }
  uint64_t pos() const { return pos_; }
  void restart_checksum() { sum_ = runtime::Checksum(); }
  uint64_t checksum() const { return sum_.digest(); }

 private:
  int fd_;
  std::string path_;
  uint64_t pos_ = 0;
  runtime::Checksum sum_;
};

struct SectionSource {
  std::string_view name;
  std::function<void(FileWriter&)> write;
};

// Removes the temporary file unless the rename happened.
class TempFile {
 public:
  explicit TempFile(const std::string& target) : path_(target + ".tmp-XXXXXX") {
    fd_ = ::mkostemp(path_.data(), O_CLOEXEC);
    KILN_CHECK(fd_ >= 0, target, ": cannot create a temporary file next to it: ", std::strerror(errno));
    ::fchmod(fd_, 0644);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  int fd() const { return fd_; }
  void commit(const std::string& target) {
    if (::fsync(fd_) != 0) throw Error(str_cat(target, ": cannot write: fsync: ", std::strerror(errno)));
    int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) throw Error(str_cat(target, ": cannot write: ", std::strerror(errno)));
    if (::rename(path_.c_str(), target.c_str()) != 0)
      throw Error(str_cat(target, ": cannot rename the finished artifact into place: ", std::strerror(errno)));
    committed_ = true;
    // Make the rename itself durable.
    std::string dir = std::filesystem::path(target).parent_path().string();
    int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  std::string path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_artifact(const std::string& path, const ArtifactManifest& manifest_in, const Model& model,
                    std::string_view kernel_library, const std::string& plan_json) {
  ArtifactManifest manifest = manifest_in;
  if (manifest.kiln_version.empty()) manifest.kiln_version = std::string(kiln_version());
  if (manifest.format_version == 0) manifest.format_version = kArtifactFormatVersion;
  KILN_CHECK(manifest.format_version == kArtifactFormatVersion, path, ": cannot write format version ",
             manifest.format_version, " (this kiln writes version ", kArtifactFormatVersion, ")");
  if (manifest.target_isa.empty()) manifest.target_isa = "scalar";
  host_supports_isa(manifest.target_isa);  // rejects unknown names

  PrintOptions popt;
  popt.elide_weights = true;
  popt.elide_over = 0;
  const std::string graph_text = print_model(model, popt);
  const std::string manifest_text = manifest_to_json(manifest).dump(1) + "\n";

  // Weight index: offsets inside weights.bin, each tensor 64-aligned.
  std::vector<StoredTensor> stored = stored_tensors(*model.graph);
  json::Value index;
  json::Value& tensors = index.set("tensors", json::Array{});
  std::vector<uint64_t> offsets;
  uint64_t weights_size = 0;
  for (const StoredTensor& s : stored) {
    const Tensor& t = s.tensor();
    weights_size = align_up(weights_size, kTensorAlign);
    offsets.push_back(weights_size);
    json::Value e;
    e.set("key", s.key);
    e.set("dtype", dtype_name(t.dtype()));
    json::Array dims;
    for (int64_t d : t.dims()) dims.emplace_back(d);
    e.set("dims", std::move(dims));
    e.set("offset", weights_size);
    e.set("bytes", static_cast<uint64_t>(t.nbytes()));
    tensors.push(std::move(e));
    weights_size += t.nbytes();
  }
  const std::string index_text = index.dump(1) + "\n";

  auto bytes_of = [](std::string_view s) { return [s](FileWriter& w) { w.write(s.data(), s.size()); }; };
  std::vector<SectionSource> sources = {
      {kManifest, bytes_of(manifest_text)},
      {kGraph, bytes_of(graph_text)},
      {kWeightIndex, bytes_of(index_text)},
      {kWeights,
       [&](FileWriter& w) {
         const uint64_t start = w.pos();
         for (size_t i = 0; i < stored.size(); ++i) {
           static const char zeros[kTensorAlign] = {};
           while (w.pos() - start < offsets[i]) w.write(zeros, std::min<uint64_t>(offsets[i] - (w.pos() - start), kTensorAlign));
           const Tensor& t = stored[i].tensor();
           if (t.nbytes() != 0) w.write(t.raw(), t.nbytes());
         }
       }},
  };
  if (!kernel_library.empty()) sources.push_back({kKernels, bytes_of(kernel_library)});
  sources.push_back({kPlan, bytes_of(plan_json)});

  TempFile tmp(path);
  FileWriter w(tmp.fd(), path);
  const uint64_t table_bytes = kEntryBytes * sources.size();
  std::vector<unsigned char> table(table_bytes, 0);
  std::vector<unsigned char> zeros(kHeaderBytes + table_bytes, 0);
  w.write(zeros.data(), zeros.size());  // header and table, filled in at the end
  for (size_t i = 0; i < sources.size(); ++i) {
    w.pad_to(kSectionAlign);
    const uint64_t offset = w.pos();
    w.restart_checksum();
    sources[i].write(w);
    unsigned char* e = table.data() + kEntryBytes * i;
    std::memcpy(e, sources[i].name.data(), sources[i].name.size());
    put_u64(e + kNameBytes, offset);
    put_u64(e + kNameBytes + 8, w.pos() - offset);
    put_u64(e + kNameBytes + 16, w.checksum());
  }
  unsigned char header[kHeaderBytes] = {};
  std::memcpy(header, kArtifactMagic.data(), kArtifactMagic.size());
  put_u32(header + 8, static_cast<uint32_t>(kArtifactFormatVersion));
  put_u32(header + 12, static_cast<uint32_t>(sources.size()));
  put_u64(header + 16, kHeaderBytes);
  put_u64(header + 24, w.pos());
  put_u64(header + 32, runtime::checksum64(table.data(), table.size()));
  put_u64(header + 40, runtime::checksum64(header, 40));
  w.pwrite_at(header, sizeof header, 0);
  w.pwrite_at(table.data(), table.size(), kHeaderBytes);
  tmp.commit(path);
}

}  // namespace kiln
