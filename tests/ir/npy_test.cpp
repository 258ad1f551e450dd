// .npy files: kiln's own round trip, files numpy writes, and broken files.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "kiln/ir/npy.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// One folder per test: ctest may run the tests of this file in parallel.
fs::path scratch_dir() {
  fs::path d = fs::path(KILN_BINARY_DIR) / "test_tmp" / "npy" /
               ::testing::UnitTest::GetInstance()->current_test_info()->name();
  fs::create_directories(d);
  return d;
}

std::string read_bytes(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

void write_bytes(const fs::path& p, const std::string& s) {
  std::ofstream f(p, std::ios::binary);
  f << s;
}

std::string error_of(const std::string& path) {
  try {
    read_npy(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

template <typename T>
Tensor ramp(DType dt, std::vector<int64_t> dims) {
  Tensor t(dt, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<T>()[i] = static_cast<T>(i * 7 % 5 + (i % 2 ? -1 : 1) * i);
  return t;
}

TEST(Npy, EveryDtypeRoundTrips) {
  std::vector<Tensor> ts = {
      ramp<float>(DType::f32, {2, 3}),   ramp<double>(DType::f64, {4}),    ramp<uint16_t>(DType::f16, {3, 1}),
      ramp<int8_t>(DType::i8, {5}),      ramp<uint8_t>(DType::u8, {2, 2}), ramp<int16_t>(DType::i16, {3}),
      ramp<uint16_t>(DType::u16, {1, 2}), ramp<int32_t>(DType::i32, {2, 1, 2}), ramp<uint32_t>(DType::u32, {2}),
      ramp<int64_t>(DType::i64, {3}),    ramp<uint64_t>(DType::u64, {2}),
      Tensor::from_vector<bool>({3}, {true, false, true}),
      Tensor::scalar<float>(-2.5f),      Tensor(DType::f32, {0, 3}),
  };
  ts[2].data<uint16_t>()[0] = f32_to_f16(0.333f);
  for (const Tensor& t : ts) {
    std::string path = (scratch_dir() / "rt.npy").string();
    write_npy(path, t);
    std::string raw = read_bytes(path);
    ASSERT_EQ(raw.compare(0, 6, "\x93NUMPY"), 0);
    size_t header_len = static_cast<unsigned char>(raw[8]) | static_cast<unsigned char>(raw[9]) << 8;
    EXPECT_EQ((10 + header_len) % 64, 0u);  // data is 64-byte aligned
    Tensor back = read_npy(path);
    EXPECT_EQ(back.dtype(), t.dtype()) << dtype_name(t.dtype());
    EXPECT_EQ(back.dims(), t.dims());
    ASSERT_EQ(back.nbytes(), t.nbytes());
    EXPECT_EQ(std::memcmp(back.raw(), t.raw(), t.nbytes()), 0) << dtype_name(t.dtype());
  }
  // bf16 has no numpy dtype: written as f32.
  Tensor b(DType::bf16, {2});
  b.data<uint16_t>()[0] = f32_to_bf16(1.5f);
  b.data<uint16_t>()[1] = f32_to_bf16(-3.0f);
  std::string path = (scratch_dir() / "bf16.npy").string();
  write_npy(path, b);
  Tensor back = read_npy(path);
  EXPECT_EQ(back.dtype(), DType::f32);
  EXPECT_EQ(back.data<float>()[1], -3.0f);
}

TEST(Npy, LargeArraysAreMappedAndOverwriteAtomically) {
  std::string path = (scratch_dir() / "large.npy").string();
  Tensor t(DType::f32, {1024, 512});  // 2 MiB: read through a mapping
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  write_npy(path, t);
  write_npy(path, t);  // replaces the file in place
  Tensor back = read_npy(path);
  EXPECT_EQ(back.data<float>()[t.numel() - 1], static_cast<float>(t.numel() - 1));
  for (const auto& e : fs::directory_iterator(scratch_dir()))
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

// numpy writes the files; kiln reads them and checks every value.
TEST(Npy, ReadsWhatNumpyWrites) {
  fs::path dir = scratch_dir() / "numpy";
  fs::create_directories(dir);
  std::string script =
      "import numpy as np, sys\n"
      "from numpy.lib import format as F\n"
      "d = sys.argv[1]\n"
      "a = np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 8 - 1\n"
      "np.save(d + '/f4.npy', a)\n"
      "for t in ['f8', 'f2', 'i1', 'u1', 'i2', 'u2', 'i4', 'u4', 'i8', 'u8']:\n"
      "    np.save(d + '/' + t + '.npy', (np.arange(6) * 3 - 5).astype(t).reshape(3, 2) if t[0] != 'u' else\n"
      "            (np.arange(6) * 3).astype(t).reshape(3, 2))\n"
      "np.save(d + '/b1.npy', np.array([True, False, False, True]))\n"
      "np.save(d + '/scalar.npy', np.float64(2.75))\n"
      "np.save(d + '/empty.npy', np.zeros((0, 5), np.int32))\n"
      "for v in [(2, 0), (3, 0)]:\n"
      "    with open(d + '/v%d.npy' % v[0], 'wb') as f: F.write_array(f, a, version=v)\n"
      "np.save(d + '/big_endian.npy', a.astype('>f4'))\n"
      "np.save(d + '/fortran.npy', np.asfortranarray(a))\n"
      "np.save(d + '/object.npy', np.array([1, 'x'], dtype=object), allow_pickle=True)\n";
  write_bytes(dir / "make.py", script);
  std::string cmd = "/usr/bin/python3 " + (dir / "make.py").string() + " " + dir.string() + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[512];
  std::string out;
  while (fgets(buf, sizeof buf, p)) out += buf;
  ASSERT_EQ(pclose(p), 0) << out;

  auto check_a = [](const Tensor& t) {
    ASSERT_EQ(t.dtype(), DType::f32);
    ASSERT_EQ(t.dims(), (std::vector<int64_t>{2, 3, 4}));
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(t.data<float>()[i], static_cast<float>(i) / 8 - 1);
  };
  check_a(read_npy((dir / "f4.npy").string()));
  check_a(read_npy((dir / "v2.npy").string()));
  check_a(read_npy((dir / "v3.npy").string()));
  const std::pair<const char*, DType> ints[] = {{"f8", DType::f64}, {"f2", DType::f16}, {"i1", DType::i8},
                                                {"u1", DType::u8},  {"i2", DType::i16}, {"u2", DType::u16},
                                                {"i4", DType::i32}, {"u4", DType::u32}, {"i8", DType::i64},
                                                {"u8", DType::u64}};
  for (const auto& [name, dt] : ints) {
    Tensor t = read_npy((dir / (std::string(name) + ".npy")).string());
    ASSERT_EQ(t.dtype(), dt) << name;
    ASSERT_EQ(t.dims(), (std::vector<int64_t>{3, 2})) << name;
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(t.as_double(i), name[0] == 'u' ? i * 3 : i * 3 - 5) << name;
  }
  Tensor b = read_npy((dir / "b1.npy").string());
  ASSERT_EQ(b.dtype(), DType::boolean);
  EXPECT_EQ(b.to_int64_vector(), (std::vector<int64_t>{1, 0, 0, 1}));
  Tensor s = read_npy((dir / "scalar.npy").string());
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.data<double>()[0], 2.75);
  Tensor e = read_npy((dir / "empty.npy").string());
  EXPECT_EQ(e.dims(), (std::vector<int64_t>{0, 5}));
  EXPECT_EQ(e.dtype(), DType::i32);

  EXPECT_NE(error_of((dir / "big_endian.npy").string()).find("big-endian"), std::string::npos);
  EXPECT_NE(error_of((dir / "fortran.npy").string()).find("Fortran"), std::string::npos);
  EXPECT_NE(error_of((dir / "object.npy").string()).find("unsupported numpy dtype '|O'"), std::string::npos);
}

// A header by hand, padded like numpy's.
std::string npy_file(const std::string& dict, const std::string& data, int major = 1) {
  size_t prefix = major == 1 ? 10 : 12;
  std::string h = dict;
  while ((prefix + h.size() + 1) % 64) h += ' ';
  h += '\n';
  std::string out = std::string("\x93NUMPY", 6) + static_cast<char>(major) + '\0';
  for (int b = 0; b < (major == 1 ? 2 : 4); ++b) out += static_cast<char>((h.size() >> (8 * b)) & 0xff);
  return out + h + data;
}

TEST(Npy, NativeByteOrderMarkIsAccepted) {
  fs::path f = scratch_dir() / "native.npy";
  int32_t v[2] = {7, -9};
  write_bytes(f, npy_file("{'descr': '=i4', 'fortran_order': False, 'shape': (2,), }",
                          std::string(reinterpret_cast<const char*>(v), 8)));
  EXPECT_EQ(read_npy(f.string()).to_int64_vector(), (std::vector<int64_t>{7, -9}));
}

TEST(Npy, BrokenFilesThrowNamingThePath) {
  fs::path good = scratch_dir() / "good.npy";
  write_npy(good.string(), Tensor::from_vector<float>({4}, {1, 2, 3, 4}));
  std::string bytes = read_bytes(good);

  fs::path f = scratch_dir() / "broken.npy";
  write_bytes(f, bytes.substr(0, bytes.size() - 3));
  std::string msg = error_of(f.string());
  EXPECT_NE(msg.find(f.string()), std::string::npos) << msg;
  EXPECT_NE(msg.find("truncated"), std::string::npos) << msg;

  write_bytes(f, bytes.substr(0, 30));  // inside the header
  EXPECT_NE(error_of(f.string()).find("truncated .npy header"), std::string::npos);

  const std::pair<std::string, const char*> bad[] = {
      {"{'descr': '<f4', 'fortran_order': False}", "lacks"},
      {"{'descr': '<f4', 'fortran_order': Maybe, 'shape': (4,), }", "fortran_order must be"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,x), }", "expected a dim"},
      {"{'descr': '<c8', 'fortran_order': False, 'shape': (4,), }", "unsupported numpy dtype '<c8'"},
      {"{'descr': '|f4', 'fortran_order': False, 'shape': (4,), }", "multi-byte"},
      {"{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (4,), }", "structured"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }", "dim too large"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'color': 1}", "unknown header key 'color'"},
      {"{'descr': '<f4', 'fortran_order': False, 'shape': (4000000000, 4000000000, 4000000000), }", "too large"},
  };
  for (const auto& [dict, want] : bad) {
    write_bytes(f, npy_file(dict, bytes.substr(64)));
    msg = error_of(f.string());
    EXPECT_NE(msg.find(want), std::string::npos) << dict << " -> " << msg;
    EXPECT_EQ(msg.rfind(f.string(), 0), 0u) << msg;
  }
  write_bytes(f, bytes + "xx");
  EXPECT_NE(error_of(f.string()).find("unexpected bytes"), std::string::npos);
  write_bytes(f, "PK\x03\x04 this is a zip");
  EXPECT_NE(error_of(f.string()).find("bad magic"), std::string::npos);
  EXPECT_NE(error_of((scratch_dir() / "missing.npy").string()).find("cannot open"), std::string::npos);
  write_bytes(f, npy_file("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", std::string("\x01\x05", 2)));
  EXPECT_NE(error_of(f.string()).find("bool element 1 is 5"), std::string::npos);
  write_bytes(f, npy_file("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", std::string(4, '\0'), 2));
  EXPECT_EQ(read_npy(f.string()).numel(), 1);
}

}  // namespace
}  // namespace kiln
