// Shapes with static and symbolic dims.
// A Dim is one of: a static size (value >= 0), a named symbol ("N", "p2o.DynamicDimension.0"),
// or unknown (neither). A Shape may have unknown rank (nothing is known about it).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

struct Dim {
  int64_t value = -1;  // >= 0 when static
  std::string symbol;  // non-empty when symbolic

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT: implicit from a size is the common case
  static Dim sym(std::string name) {
    Dim d;
    d.symbol = std::move(name);
    return d;
  }
  static Dim unknown() { return Dim(); }

  bool is_static() const { return value >= 0; }
  bool is_symbolic() const { return value < 0 && !symbol.empty(); }
  bool is_unknown() const { return value < 0 && symbol.empty(); }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  std::string str() const;  // "8", "N", "?"
};

struct Shape {
  std::vector<Dim> dims;
  bool rank_known = true;

  Shape() = default;
  Shape(std::vector<Dim> d) : dims(std::move(d)) {}  // NOLINT
  Shape(std::initializer_list<int64_t> d) {
    for (auto v : d) dims.emplace_back(v);
  }
  static Shape unknown_rank() {
    Shape s;
    s.rank_known = false;
    return s;
  }
  static Shape of(const std::vector<int64_t>& d) {
    Shape s;
    for (auto v : d) s.dims.emplace_back(v);
    return s;
  }

  size_t rank() const { return dims.size(); }
  bool is_static() const;
  std::optional<int64_t> numel() const;            // when static
  std::vector<int64_t> static_dims() const;         // throws kiln::Error unless static
  const Dim& operator[](size_t i) const { return dims[i]; }
  Dim& operator[](size_t i) { return dims[i]; }
  bool operator==(const Shape& o) const { return rank_known == o.rank_known && dims == o.dims; }
  bool operator!=(const Shape& o) const { return !(*this == o); }
  std::string str() const;  // "[N,3,224,224]", "[]" (scalar), "[*]" (unknown rank)
};

// A computed dim may be a linear expression of symbols, written as text in Dim::symbol:
// "past+seq", "2*N", "N-1". Shape inference makes these (e.g. Range(past, past+seq) has
// length "seq") and bind_dims evaluates them.
struct DimExpr {
  std::map<std::string, int64_t> terms;  // symbol -> coefficient (never 0)
  int64_t constant = 0;

  // nullopt for an unknown dim or text that is not a linear expression.
  static std::optional<DimExpr> of(const Dim& d);
  // Static when there are no terms; the plain symbol for 1*s; else canonical text.
  Dim to_dim() const;
  DimExpr operator+(const DimExpr& o) const;
  DimExpr operator-(const DimExpr& o) const;
  DimExpr scaled(int64_t k) const;
};

// Binding of symbol names to sizes, e.g. from `--dim N=8`.
using DimBindings = std::map<std::string, int64_t>;

// Replaces bound symbols (and expressions whose symbols are all bound) by their values.
Shape bind_dims(const Shape& s, const DimBindings& b);

// Numpy-style broadcast of two shapes; symbolic dims are kept when they match or
// meet a 1. Returns nullopt when the shapes cannot broadcast (static mismatch).
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b);

int64_t numel_of(const std::vector<int64_t>& dims);
std::string dims_str(const std::vector<int64_t>& dims);  // "[1,3,224,224]"

}  // namespace kiln
