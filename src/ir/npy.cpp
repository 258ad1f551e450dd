// NumPy .npy reader and writer. Format (numpy.lib.format): magic "\x93NUMPY", major and
// minor version bytes, header length (uint16 LE in 1.0, uint32 LE in 2.0/3.0), then a
// Python dict literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces to a multiple of 64 bytes and ended by '\n', then the raw data.
#include "kiln/ir/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>

namespace kiln {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kMapAtLeast = size_t{1} << 20;  // smaller arrays are read into owned memory

struct Header {
  std::string descr;
  bool fortran = false;
  std::vector<int64_t> shape;
  size_t data_offset = 0;
};

// numpy descr (without its byte-order mark) <-> kiln dtype.
struct DescrName {
  const char* code;
  DType dtype;
};
constexpr DescrName kDescrs[] = {
    {"f4", DType::f32}, {"f8", DType::f64}, {"f2", DType::f16}, {"i1", DType::i8},  {"u1", DType::u8},
    {"i2", DType::i16}, {"u2", DType::u16}, {"i4", DType::i32}, {"u4", DType::u32}, {"i8", DType::i64},
    {"u8", DType::u64}, {"b1", DType::boolean},
};

DType dtype_of_descr(const std::string& path, const std::string& descr) {
  KILN_CHECK(descr.size() == 3, path, ": unsupported numpy dtype '", descr, "' (object, string or structured arrays "
             "are not tensors)");
  char order = descr[0];
  std::string code = descr.substr(1);
  for (const auto& d : kDescrs) {
    if (code != d.code) continue;
    bool one_byte = dtype_size(d.dtype) == 1;
    KILN_CHECK(order != '>' || one_byte, path, ": big-endian numpy data ('", descr,
               "') is not supported; save it with arr.astype(arr.dtype.newbyteorder('<'))");
    KILN_CHECK(order == '<' || order == '=' || order == '|' || order == '>', path, ": bad byte-order mark in '",
               descr, "'");
    KILN_CHECK(order != '|' || one_byte, path, ": byte order '|' on the multi-byte dtype '", descr, "'");
    return d.dtype;
  }
  throw Error(str_cat(path, ": unsupported numpy dtype '", descr, "'"));
}

// A parser for the one-line Python dict literal of the header.
class DictParser {
 public:
  DictParser(const std::string& path, const std::string& s) : path_(path), s_(s) {}

  Header parse() {
    Header h;
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (!accept('}')) {
      std::string key = string_lit();
      expect(':');
      if (key == "descr") {
        skip_space();
        KILN_CHECK(peek() == '\'' || peek() == '"', path_, ": unsupported numpy dtype (structured arrays are not "
                   "tensors)");
        h.descr = string_lit();
        have_descr = true;
      } else if (key == "fortran_order") {
        h.fortran = boolean();
        have_order = true;
      } else if (key == "shape") {
        h.shape = tuple();
        have_shape = true;
      } else {
        fail(str_cat("unknown header key '", key, "'"));
      }
      if (!accept(',')) {
        expect('}');
        break;
      }
    }
    KILN_CHECK(have_descr && have_order && have_shape, path_, ": npy header lacks descr, fortran_order or shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& msg) const { throw Error(str_cat(path_, ": bad npy header: ", msg)); }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t')) ++i_;
  }
  char peek() const { return i_ < s_.size() ? s_[i_] : '\0'; }
  bool accept(char c) {
    skip_space();
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  void expect(char c) {
    if (!accept(c)) fail(str_cat("expected '", c, "' at offset ", i_));
  }
  std::string string_lit() {
    skip_space();
    char q = peek();
    if (q != '\'' && q != '"') fail(str_cat("expected a string at offset ", i_));
    size_t end = s_.find(q, i_ + 1);
    if (end == std::string::npos) fail("unterminated string");
    std::string out = s_.substr(i_ + 1, end - i_ - 1);
    i_ = end + 1;
    return out;
  }
  bool boolean() {
    skip_space();
    if (s_.compare(i_, 4, "True") == 0) {
      i_ += 4;
      return true;
    }
    if (s_.compare(i_, 5, "False") == 0) {
      i_ += 5;
      return false;
    }
    fail("fortran_order must be True or False");
  }
  std::vector<int64_t> tuple() {
    std::vector<int64_t> dims;
    expect('(');
    while (!accept(')')) {
      skip_space();
      int64_t v = 0;
      size_t start = i_;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v)) fail("dim too large");
        ++i_;
      }
      if (i_ == start) fail(str_cat("expected a dim at offset ", i_));
      if (peek() == 'L') ++i_;  // Python 2 long
      dims.push_back(v);
      if (!accept(',')) {
        expect(')');
        break;
      }
    }
    return dims;
  }

  const std::string& path_;
  const std::string& s_;
  size_t i_ = 0;
};

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

// Reads exactly n bytes at offset; false at end of file.
bool read_at(int fd, void* buf, size_t n, size_t offset) {
  char* p = static_cast<char*>(buf);
  while (n > 0) {
    ssize_t r = ::pread(fd, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<size_t>(r);
  }
  return true;
}

Header read_header(const std::string& path, int fd) {
  unsigned char pre[12];
  KILN_CHECK(read_at(fd, pre, 10, 0), path, ": not a .npy file (too short)");
  KILN_CHECK(std::memcmp(pre, kMagic, kMagicLen) == 0, path, ": not a .npy file (bad magic)");
  int major = pre[6];
  KILN_CHECK(major >= 1 && major <= 3, path, ": unsupported .npy format version ", major, ".", int(pre[7]));
  size_t len, prefix;
  if (major == 1) {
    len = pre[8] | size_t{pre[9]} << 8;
    prefix = 10;
  } else {
    KILN_CHECK(read_at(fd, pre + 10, 2, 10), path, ": truncated .npy header");
    len = pre[8] | size_t{pre[9]} << 8 | size_t{pre[10]} << 16 | size_t{pre[11]} << 24;
    prefix = 12;
  }
  KILN_CHECK(len <= (size_t{1} << 24), path, ": .npy header of ", len, " bytes is implausibly large");
  std::string text(len, '\0');
  KILN_CHECK(read_at(fd, text.data(), len, prefix), path, ": truncated .npy header");
  Header h = DictParser(path, text).parse();
  h.data_offset = prefix + len;
  return h;
}

}  // namespace

Tensor read_npy(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  KILN_CHECK(fd.get() >= 0, path, ": cannot open: ", std::strerror(errno));
  Header h = read_header(path, fd.get());
  DType dt = dtype_of_descr(path, h.descr);
  uint64_t n = 1;
  for (int64_t d : h.shape)
    KILN_CHECK(!__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n), path, ": shape is too large");
  uint64_t bytes;
  KILN_CHECK(!__builtin_mul_overflow(n, dtype_size(dt), &bytes), path, ": shape is too large");
  // Fortran order of one dim or fewer is the same layout as C order.
  size_t big_dims = 0;
  for (int64_t d : h.shape) big_dims += d > 1;
  KILN_CHECK(!h.fortran || big_dims <= 1, path, ": Fortran-order arrays are not supported; save with "
             "np.ascontiguousarray(arr)");

  struct stat st {};
  KILN_CHECK(fstat(fd.get(), &st) == 0, path, ": cannot stat: ", std::strerror(errno));
  uint64_t have = static_cast<uint64_t>(st.st_size) - std::min<uint64_t>(st.st_size, h.data_offset);
  KILN_CHECK(have >= bytes, path, ": truncated: the header promises ", bytes, " bytes of ", h.descr,
             dims_str(h.shape), " data, the file has ", have);
  KILN_CHECK(have == bytes, path, ": ", have - bytes, " unexpected bytes after the array data");

  Tensor t;
  if (bytes >= kMapAtLeast && h.data_offset % dtype_size(dt) == 0) {
    t = Tensor(dt, h.shape, map_file(path, h.data_offset, bytes));
  } else {
    t = Tensor(dt, h.shape);
    KILN_CHECK(bytes == 0 || read_at(fd.get(), t.raw(), bytes, h.data_offset), path, ": truncated data");
  }
  if (dt == DType::boolean) {  // anything but 0/1 in a bool is undefined behaviour
    const uint8_t* p = static_cast<const uint8_t*>(t.raw());
    for (uint64_t i = 0; i < n; ++i) KILN_CHECK(p[i] <= 1, path, ": bool element ", i, " is ", int(p[i]));
  }
  return t;
}

namespace {
std::string descr_of(DType dt) {
  for (const auto& d : kDescrs)
    if (d.dtype == dt) return std::string(dtype_size(dt) == 1 ? "|" : "<") + d.code;
  throw Error(str_cat("write_npy: no numpy dtype for ", dtype_name(dt)));
}

bool write_all(int fd, const void* buf, size_t n) {
  const char* p = static_cast<const char*>(buf);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
}  // namespace

void write_npy(const std::string& path, const Tensor& in) {
  KILN_CHECK(in.defined(), path, ": cannot write a tensor of undefined dtype");
  const Tensor t = in.dtype() == DType::bf16 ? in.cast(DType::f32) : in;
  std::string dict = "{'descr': '" + descr_of(t.dtype()) + "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < t.rank(); ++i) dict += std::to_string(t.dim(i)) + (t.rank() == 1 ? "," : i + 1 < t.rank() ? ", " : "");
  dict += "), }";
  // Version 1.0 while the header fits its 16-bit length, else 2.0; data starts 64-aligned.
  bool v1 = dict.size() + 1 + 10 + 63 <= 65535;
  size_t prefix = v1 ? 10 : 12;
  size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  size_t len = total - prefix;
  dict.append(len - dict.size() - 1, ' ');
  dict += '\n';
  std::string head(kMagic, kMagicLen);
  head += static_cast<char>(v1 ? 1 : 2);
  head += '\0';
  for (size_t b = 0; b < (v1 ? 2u : 4u); ++b) head += static_cast<char>((len >> (8 * b)) & 0xff);
  head += dict;

  static std::atomic<uint64_t> counter{0};
  std::string tmp = str_cat(path, ".tmp.", ::getpid(), ".", counter++);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  KILN_CHECK(fd >= 0, path, ": cannot create ", tmp, ": ", std::strerror(errno));
  bool ok = write_all(fd, head.data(), head.size()) && write_all(fd, t.raw(), t.nbytes());
  int saved = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) saved = errno;
    ::unlink(tmp.c_str());
    throw Error(str_cat(path, ": cannot write: ", std::strerror(saved)));
  }
}

}  // namespace kiln
