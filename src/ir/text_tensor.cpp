// Dtypes, shapes and tensor literals of the textual IR (docs/textual-ir.md).
#include "text_tensor.h"

#include <sys/mman.h>

#include <cstring>
#include <limits>

namespace kiln::text {
namespace {

constexpr uint64_t kMaxTensorBytes = uint64_t{1} << 36;  // 64 GiB: past this the text is garbage

// Zero-filled storage for elided weights: anonymous pages cost nothing until written.
class ZeroPages : public Buffer {
 public:
  explicit ZeroPages(size_t bytes) : size_(bytes) {
    p_ = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    KILN_CHECK(p_ != MAP_FAILED, "out of memory mapping ", bytes, " bytes of elided weights");
  }
  ~ZeroPages() override { munmap(p_, size_); }
  void* data() override { return p_; }
  size_t size() const override { return size_; }

 private:
  void* p_;
  size_t size_;
};

Tensor zero_tensor(DType dt, std::vector<int64_t> dims, size_t bytes) {
  if (bytes < (size_t{1} << 20)) return Tensor(dt, std::move(dims));
  return Tensor(dt, std::move(dims), std::make_shared<ZeroPages>(bytes));
}

template <typename T>
T ranged(const Token& e) {
  int64_t v = Cursor::integer<int64_t>(e);
  if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      v > static_cast<int64_t>(std::numeric_limits<T>::max()))
    Cursor::fail(e, str_cat("value ", v, " does not fit in the tensor's dtype"));
  return static_cast<T>(v);
}

void set_element(Tensor& t, uint64_t i, const Token& e) {
  void* p = t.raw();
  switch (t.dtype()) {
    case DType::f32: static_cast<float*>(p)[i] = Cursor::floating<float>(e); return;
    case DType::f64: static_cast<double*>(p)[i] = Cursor::floating<double>(e); return;
    case DType::f16: static_cast<uint16_t*>(p)[i] = f32_to_f16(Cursor::floating<float>(e)); return;
    case DType::bf16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(Cursor::floating<float>(e)); return;
    case DType::i8: static_cast<int8_t*>(p)[i] = ranged<int8_t>(e); return;
    case DType::u8: static_cast<uint8_t*>(p)[i] = ranged<uint8_t>(e); return;
    case DType::i16: static_cast<int16_t*>(p)[i] = ranged<int16_t>(e); return;
    case DType::u16: static_cast<uint16_t*>(p)[i] = ranged<uint16_t>(e); return;
    case DType::i32: static_cast<int32_t*>(p)[i] = ranged<int32_t>(e); return;
    case DType::u32: static_cast<uint32_t*>(p)[i] = ranged<uint32_t>(e); return;
    case DType::i64: static_cast<int64_t*>(p)[i] = Cursor::integer<int64_t>(e); return;
    case DType::u64: static_cast<uint64_t*>(p)[i] = Cursor::integer<uint64_t>(e); return;
    case DType::boolean: {
      bool b;
      if (e.kind == Tok::Ident) {
        b = e.text == "true";
      } else {
        int64_t v = Cursor::integer<int64_t>(e);
        if (v != 0 && v != 1) Cursor::fail(e, "a bool element must be true, false, 0 or 1");
        b = v == 1;
      }
      static_cast<uint8_t*>(p)[i] = b ? 1 : 0;
      return;
    }
    default: Cursor::fail(e, "tensor of undefined dtype");
  }
}

}  // namespace

DType parse_dtype(Cursor& c) {
  if (c.accept("?")) return DType::undefined;
  const Token& t = c.peek();
  if (t.kind != Tok::Ident) Cursor::fail(t, str_cat("expected a dtype, found ", Cursor::describe(t)));
  DType dt = dtype_from_name(t.text);
  if (dt == DType::undefined) Cursor::fail(t, str_cat("unknown dtype '", t.text, "'"));
  c.next();
  return dt;
}

Shape parse_shape(Cursor& c) {
  c.expect("[");
  if (c.accept("*")) {
    c.expect("]");
    return Shape::unknown_rank();
  }
  Shape s;
  if (c.accept("]")) return s;
  do {
    const Token& t = c.peek();
    if (t.kind == Tok::Int) {
      int64_t v = Cursor::integer<int64_t>(c.next());
      if (v < 0) Cursor::fail(t, "dims must not be negative (write '?' for an unknown dim)");
      s.dims.emplace_back(v);
    } else if (c.accept("?")) {
      s.dims.push_back(Dim::unknown());
    } else if (t.kind == Tok::Ident || t.kind == Tok::String) {
      if (t.text.empty()) Cursor::fail(t, "empty dim symbol");
      s.dims.push_back(Dim::sym(c.next().text));
    } else {
      Cursor::fail(t, str_cat("expected a dim (size, symbol or '?'), found ", Cursor::describe(t)));
    }
  } while (c.accept(","));
  c.expect("]");
  return s;
}

Tensor parse_tensor(Cursor& c) {
  const Token& start = c.peek();
  DType dt = parse_dtype(c);
  if (dt == DType::undefined) Cursor::fail(start, "a tensor needs a dtype");
  Shape s = parse_shape(c);
  if (!s.is_static()) Cursor::fail(start, "tensor dims must be static sizes");
  std::vector<int64_t> dims = s.static_dims();
  uint64_t n = 1;
  for (int64_t d : dims)
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n) || n > kMaxTensorBytes)
      Cursor::fail(start, "tensor is too large");
  uint64_t bytes = n * dtype_size(dt);
  if (bytes > kMaxTensorBytes) Cursor::fail(start, "tensor is too large");

  if (c.is_ident("elided")) {
    c.next();
    if (c.accept("<")) {  // the summary is for readers; the data reads back as zeros
      while (!c.is_punct(">")) {
        c.name("a summary key");
        c.expect("=");
        Cursor::floating<double>(c.next());
        if (!c.accept(",")) break;
      }
      c.expect(">");
    }
    return zero_tensor(dt, dims, bytes);
  }
  if (!c.is_ident("dense")) Cursor::fail(c.peek(), str_cat("expected 'dense<...>' or 'elided', found ",
                                                     Cursor::describe(c.peek())));
  c.next();
  c.expect("<");
  size_t first = c.pos();
  uint64_t count = 0;
  if (!c.is_punct(">")) {
    do {
      const Token& e = c.next();
      bool is_bool = e.kind == Tok::Ident && (e.text == "true" || e.text == "false");
      if (e.kind != Tok::Int && e.kind != Tok::Float && !is_bool)
        Cursor::fail(e, str_cat("expected a tensor element, found ", Cursor::describe(e)));
      ++count;
    } while (c.accept(","));
  }
  const Token& close = c.peek();
  c.expect(">");
  if (count != n && !(count == 1 && n > 0))
    Cursor::fail(close, str_cat("tensor ", dtype_name(dt), dims_str(dims), " has ", n, " elements, found ", count,
                                " (one value fills the whole tensor)"));
  Tensor t = n * dtype_size(dt) >= (size_t{1} << 20) ? zero_tensor(dt, dims, bytes) : Tensor(dt, dims);
  for (uint64_t i = 0; i < count; ++i) set_element(t, i, c.at(first + 2 * i));
  if (count == 1 && n > 1) {  // splat
    size_t es = dtype_size(dt);
    char* p = static_cast<char*>(t.raw());
    for (uint64_t i = 1; i < n; ++i) std::memcpy(p + i * es, p, es);
  }
  return t;
}

}  // namespace kiln::text
