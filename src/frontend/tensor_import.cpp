// TensorProto / TypeProto -> kiln. Every size read from the file is checked before it is
// used: a tensor's data must hold exactly dims x dtype bytes, wherever it is stored.
#include <charconv>
#include <cstring>
#include <limits>

#include "onnx_convert.h"

namespace kiln::onnx_io {
namespace {

using TP = onnx::TensorProto;

// Keeps a protobuf string (moved out of the parsed message) alive as tensor storage,
// so raw_data is not copied a second time.
class StringBuffer : public Buffer {
 public:
  explicit StringBuffer(std::string s) : s_(std::move(s)) {}
  void* data() override { return s_.data(); }
  size_t size() const override { return s_.size(); }

 private:
  std::string s_;
};

// Element count of dims. Rejects negative dims, and dims whose non-zero product could
// overflow int64 in later size or stride arithmetic (even when a zero dim makes numel 0).
int64_t checked_numel(const google::protobuf::RepeatedField<int64_t>& dims, const std::string& what) {
  std::vector<int64_t> v(dims.begin(), dims.end());
  check_static_dims(v, what);
  return numel_of(v);
}

std::vector<int64_t> dims_of(const TP& t) { return {t.dims().begin(), t.dims().end()}; }

// A relative path that stays inside the model directory: no "..", not absolute.
void check_external_location(const std::string& loc, const std::string& what) {
  KILN_CHECK(!loc.empty(), what, ": external data has no location");
  KILN_CHECK(loc.find('\0') == std::string::npos, what, ": external data location contains a NUL byte");
  KILN_CHECK(loc[0] != '/' && loc[0] != '\\', what, ": external data location '", loc,
             "' is absolute; it must be relative to the model file");
  size_t start = 0;
  while (start <= loc.size()) {
    size_t end = loc.find_first_of("/\\", start);
    if (end == std::string::npos) end = loc.size();
    KILN_CHECK(loc.compare(start, end - start, "..") != 0, what, ": external data location '", loc,
               "' escapes the model directory");
    start = end + 1;
  }
}

uint64_t parse_u64(const std::string& s, const std::string& key, const std::string& what) {
  uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  KILN_CHECK(ec == std::errc() && p == s.data() + s.size() && !s.empty(), what, ": external data ", key, " '", s,
             "' is not a non-negative integer");
  return v;
}

Tensor external_tensor(const TP& t, DType dt, int64_t numel, const TensorSource& src, const std::string& what) {
  KILN_CHECK(!src.model_dir.empty(), what,
             ": uses external data, which needs the model loaded from a file (not from bytes)");
  std::string location;
  uint64_t offset = 0;
  bool has_length = false;
  uint64_t length = 0;
  for (const auto& kv : t.external_data()) {  // other keys (checksum, basepath) are not needed
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      offset = parse_u64(kv.value(), "offset", what);
    } else if (kv.key() == "length") {
      length = parse_u64(kv.value(), "length", what);
      has_length = true;
    }
  }
  check_external_location(location, what);
  const size_t nbytes = static_cast<size_t>(numel) * dtype_size(dt);
  KILN_CHECK(!has_length || length == nbytes, what, ": external data length ", length, " does not match ",
             dtype_name(dt), dims_str(dims_of(t)), " (", nbytes, " bytes)");
  if (nbytes == 0) return Tensor(dt, dims_of(t));
  std::string path = src.model_dir + "/" + location;
  KILN_CHECK(offset <= std::numeric_limits<size_t>::max() - nbytes, what, ": external data offset is too large");
  std::shared_ptr<Buffer> mapped;
  try {
    mapped = map_file(path, static_cast<size_t>(offset), nbytes);
  } catch (const Error& e) {
    throw Error(str_cat(what, ": external data: ", e.what()));
  }
  Tensor view(dt, dims_of(t), mapped);
  // Misaligned data (an odd offset) is copied so typed reads stay aligned.
  if (reinterpret_cast<uintptr_t>(view.raw()) % dtype_size(dt) != 0) return view.clone();
  if (dt == DType::boolean) {  // bytes other than 0/1 are not valid bools
    Tensor owned = view.clone();
    auto* b = static_cast<uint8_t*>(owned.raw());
    for (int64_t i = 0; i < numel; ++i) b[i] = b[i] != 0;
    return owned;
  }
  return view;
}

Tensor raw_tensor(TP& t, DType dt, int64_t numel, const std::string& what) {
  const size_t nbytes = static_cast<size_t>(numel) * dtype_size(dt);
  KILN_CHECK(t.raw_data().size() == nbytes, what, ": raw_data has ", t.raw_data().size(), " bytes, ",
             dtype_name(dt), dims_str(dims_of(t)), " needs ", nbytes);
  if (dt == DType::boolean) {
    std::string* s = t.mutable_raw_data();
    for (char& c : *s) c = c != 0;
  }
  auto buf = std::make_shared<StringBuffer>(std::move(*t.mutable_raw_data()));
  t.clear_raw_data();
  if (reinterpret_cast<uintptr_t>(buf->data()) % 16 == 0) return Tensor(dt, dims_of(t), buf);
  Tensor copy(dt, dims_of(t));  // short strings live inside the object; copy to be safe on alignment
  if (nbytes) std::memcpy(copy.raw(), buf->data(), nbytes);
  return copy;
}

template <typename Dst, typename Field>
Tensor typed_tensor(const TP& t, DType dt, int64_t numel, const Field& field, const char* field_name,
                    const std::string& what) {
  KILN_CHECK(field.size() == numel, what, ": ", field_name, " has ", field.size(), " values, ", dtype_name(dt),
             dims_str(dims_of(t)), " needs ", numel);
  Tensor out(dt, dims_of(t));
  Dst* d = static_cast<Dst*>(out.raw());
  for (int64_t i = 0; i < numel; ++i) {
    if constexpr (std::is_same_v<Dst, bool>) d[i] = field.Get(i) != 0;
    else d[i] = static_cast<Dst>(field.Get(i));
  }
  return out;
}

}  // namespace

void check_static_dims(const std::vector<int64_t>& dims, const std::string& what) {
  const int64_t limit = std::numeric_limits<int64_t>::max() / 16;
  int64_t product = 1;
  for (int64_t d : dims) {
    KILN_CHECK(d >= 0, what, ": negative dim ", d);
    if (d == 0) continue;
    KILN_CHECK(product <= limit / d, what, ": dims ", dims_str(dims), " are too large");
    product *= d;
  }
}

DType dtype_from_onnx(int32_t elem_type, const std::string& what) {
  switch (elem_type) {
    case TP::FLOAT: return DType::f32;
    case TP::UINT8: return DType::u8;
    case TP::INT8: return DType::i8;
    case TP::UINT16: return DType::u16;
    case TP::INT16: return DType::i16;
    case TP::INT32: return DType::i32;
    case TP::INT64: return DType::i64;
    case TP::BOOL: return DType::boolean;
    case TP::FLOAT16: return DType::f16;
    case TP::DOUBLE: return DType::f64;
    case TP::UINT32: return DType::u32;
    case TP::UINT64: return DType::u64;
    case TP::BFLOAT16: return DType::bf16;
    case TP::STRING: throw Error(str_cat(what, ": string tensors are not supported"));
    case TP::COMPLEX64:
    case TP::COMPLEX128: throw Error(str_cat(what, ": complex tensors are not supported"));
    default: throw Error(str_cat(what, ": unknown ONNX data type ", elem_type));
  }
}

int32_t dtype_to_onnx(DType t) {
  switch (t) {
    case DType::f32: return TP::FLOAT;
    case DType::u8: return TP::UINT8;
    case DType::i8: return TP::INT8;
    case DType::u16: return TP::UINT16;
    case DType::i16: return TP::INT16;
    case DType::i32: return TP::INT32;
    case DType::i64: return TP::INT64;
    case DType::boolean: return TP::BOOL;
    case DType::f16: return TP::FLOAT16;
    case DType::f64: return TP::DOUBLE;
    case DType::u32: return TP::UINT32;
    case DType::u64: return TP::UINT64;
    case DType::bf16: return TP::BFLOAT16;
    default: return TP::UNDEFINED;
  }
}

Tensor tensor_from_onnx(TP& t, const TensorSource& src, const std::string& what) {
  KILN_CHECK(!t.has_segment(), what, ": segmented tensors are not supported");
  DType dt = dtype_from_onnx(t.data_type(), what);
  int64_t numel = checked_numel(t.dims(), what);
  if (t.data_location() == TP::EXTERNAL) return external_tensor(t, dt, numel, src, what);
  KILN_CHECK(t.data_location() == TP::DEFAULT, what, ": unknown data_location ", t.data_location());
  if (t.has_raw_data()) return raw_tensor(t, dt, numel, what);
  switch (dt) {
    case DType::f32: return typed_tensor<float>(t, dt, numel, t.float_data(), "float_data", what);
    case DType::f64: return typed_tensor<double>(t, dt, numel, t.double_data(), "double_data", what);
    case DType::i64: return typed_tensor<int64_t>(t, dt, numel, t.int64_data(), "int64_data", what);
    case DType::u64: return typed_tensor<uint64_t>(t, dt, numel, t.uint64_data(), "uint64_data", what);
    case DType::u32: return typed_tensor<uint32_t>(t, dt, numel, t.uint64_data(), "uint64_data", what);
    case DType::i32: return typed_tensor<int32_t>(t, dt, numel, t.int32_data(), "int32_data", what);
    case DType::i16: return typed_tensor<int16_t>(t, dt, numel, t.int32_data(), "int32_data", what);
    case DType::u16:
    case DType::f16:  // f16/bf16 keep their bit patterns in the low 16 bits of int32_data
    case DType::bf16: return typed_tensor<uint16_t>(t, dt, numel, t.int32_data(), "int32_data", what);
    case DType::i8: return typed_tensor<int8_t>(t, dt, numel, t.int32_data(), "int32_data", what);
    case DType::u8: return typed_tensor<uint8_t>(t, dt, numel, t.int32_data(), "int32_data", what);
    case DType::boolean: return typed_tensor<bool>(t, dt, numel, t.int32_data(), "int32_data", what);
    default: throw Error(str_cat(what, ": unsupported data type"));
  }
}

void type_from_onnx(const onnx::TypeProto& type, const std::string& what, DType* dtype, Shape* shape) {
  KILN_CHECK(type.value_case() == onnx::TypeProto::kTensorType || type.value_case() == onnx::TypeProto::VALUE_NOT_SET,
             what, ": only tensor types are supported (got a sequence, map, optional or sparse type)");
  *dtype = DType::undefined;
  *shape = Shape::unknown_rank();
  if (!type.has_tensor_type()) return;
  const auto& tt = type.tensor_type();
  if (tt.elem_type() != TP::UNDEFINED) *dtype = dtype_from_onnx(tt.elem_type(), what);
  if (!tt.has_shape()) return;
  Shape s;
  std::vector<int64_t> static_dims;
  for (const auto& d : tt.shape().dim()) {
    if (d.has_dim_value()) {
      static_dims.push_back(d.dim_value());
      check_static_dims(static_dims, what);
      s.dims.emplace_back(d.dim_value());
    } else if (d.has_dim_param() && !d.dim_param().empty()) {
      s.dims.push_back(Dim::sym(d.dim_param()));
    } else {
      s.dims.push_back(Dim::unknown());
    }
  }
  *shape = std::move(s);
}

}  // namespace kiln::onnx_io
