// Model -> ModelProto, and writing it to disk atomically (temp file in the same directory,
// then rename), optionally with large tensors in "<path>.data".
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <filesystem>

#include "kiln/frontend/onnx.h"
#include "onnx_convert.h"

namespace kiln {
namespace {

// A file written under a temporary name and renamed into place on commit(); removed
// if never committed, so readers never see a half-written model.
class AtomicFile {
 public:
  explicit AtomicFile(const std::string& path) : path_(path), tmp_(path + ".tmpXXXXXX") {
    fd_ = ::mkstemp(tmp_.data());
    KILN_CHECK(fd_ >= 0, path, ": cannot create a temporary file next to it: ", std::strerror(errno));
    ::fchmod(fd_, 0644);
  }
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(const void* data, size_t n) {
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      ssize_t w = ::write(fd_, p, n);
      if (w < 0 && errno == EINTR) continue;
      KILN_CHECK(w > 0, path_, ": write failed: ", std::strerror(errno));
      p += w;
      n -= static_cast<size_t>(w);
      size_ += static_cast<size_t>(w);
    }
  }
  size_t size() const { return size_; }
  void commit() {
    KILN_CHECK(::fsync(fd_) == 0, path_, ": fsync failed: ", std::strerror(errno));
    ::close(fd_);
    fd_ = -1;
    KILN_CHECK(::rename(tmp_.c_str(), path_.c_str()) == 0, path_, ": rename failed: ", std::strerror(errno));
    committed_ = true;
  }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  size_t size_ = 0;
  bool committed_ = false;
};

// Appends tensors to one data file, each at a 64-byte aligned offset (so mapped weights
// are aligned for vector loads when the model is imported again).
class DataFileWriter : public onnx_io::ExternalWriter {
 public:
  DataFileWriter(std::string path, std::string location) : path_(std::move(path)), location_(std::move(location)) {}
  void store(const Tensor& t, onnx::TensorProto* tp) override {
    if (!file_) file_ = std::make_unique<AtomicFile>(path_);
    static const char zeros[64] = {};
    size_t pad = (64 - file_->size() % 64) % 64;
    file_->write(zeros, pad);
    size_t offset = file_->size();
    file_->write(t.raw(), t.nbytes());
    tp->set_data_location(onnx::TensorProto::EXTERNAL);
    auto add = [&](const char* k, const std::string& v) {
      auto* kv = tp->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    };
    add("location", location_);
    add("offset", std::to_string(offset));
    add("length", std::to_string(t.nbytes()));
  }
  void commit() {
    if (file_) file_->commit();
  }

 private:
  std::string path_, location_;
  std::unique_ptr<AtomicFile> file_;
};

onnx::ModelProto model_to_proto(const Model& m, int64_t external_over, onnx_io::ExternalWriter* external) {
  KILN_CHECK(m.graph != nullptr, "cannot export a model without a graph");
  onnx::ModelProto mp;
  mp.set_ir_version(m.ir_version);
  mp.set_producer_name(m.producer_name.empty() ? "kiln" : m.producer_name);
  if (!m.producer_version.empty()) mp.set_producer_version(m.producer_version);
  for (const auto& [domain, version] : m.opsets) {
    auto* os = mp.add_opset_import();
    os->set_domain(domain);
    os->set_version(version);
  }
  onnx_io::graph_to_onnx(*m.graph, mp.mutable_graph(), m.ir_version, external_over, external);
  return mp;
}

std::string serialize(const onnx::ModelProto& mp) {
  KILN_CHECK(mp.ByteSizeLong() <= static_cast<size_t>(INT_MAX), "model is ", mp.ByteSizeLong(),
             " bytes; over 2 GB it must be exported with external data");
  std::string out;
  KILN_CHECK(mp.SerializeToString(&out), "failed to serialize the ONNX model");
  return out;
}

}  // namespace

std::string export_onnx_bytes(const Model& m) { return serialize(model_to_proto(m, -1, nullptr)); }

void export_onnx(const Model& m, const std::string& path, int64_t external_over_bytes) {
  std::string data_path = path + ".data";
  DataFileWriter data(data_path, std::filesystem::path(data_path).filename().string());
  std::string bytes = serialize(model_to_proto(m, external_over_bytes, &data));
  data.commit();  // weights first: the model must never point at data that is not there yet
  AtomicFile f(path);
  f.write(bytes.data(), bytes.size());
  f.commit();
}

}  // namespace kiln
