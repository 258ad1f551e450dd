#include "kiln/ir/shape.h"

#include "kiln/ir/error.h"

namespace kiln {

std::string Dim::str() const {
  if (is_static()) return std::to_string(value);
  if (is_symbolic()) return symbol;
  return "?";
}

bool Shape::is_static() const {
  if (!rank_known) return false;
  for (const auto& d : dims)
    if (!d.is_static()) return false;
  return true;
}

std::optional<int64_t> Shape::numel() const {
  if (!is_static()) return std::nullopt;
  int64_t n = 1;
  for (const auto& d : dims) n *= d.value;
  return n;
}

std::vector<int64_t> Shape::static_dims() const {
  KILN_CHECK(is_static(), "shape ", str(), " is not static");
  std::vector<int64_t> out;
  out.reserve(dims.size());
  for (const auto& d : dims) out.push_back(d.value);
  return out;
}

std::string Shape::str() const {
  if (!rank_known) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += dims[i].str();
  }
  return s + "]";
}

Shape bind_dims(const Shape& s, const DimBindings& b) {
  Shape out = s;
  for (auto& d : out.dims) {
    if (d.is_symbolic()) {
      auto it = b.find(d.symbol);
      if (it != b.end()) d = Dim(it->second);
    }
  }
  return out;
}

std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  if (!a.rank_known || !b.rank_known) return Shape::unknown_rank();
  size_t r = std::max(a.rank(), b.rank());
  Shape out;
  out.dims.resize(r);
  for (size_t i = 0; i < r; ++i) {
    const Dim one(1);
    const Dim& da = i < r - a.rank() ? one : a.dims[i - (r - a.rank())];
    const Dim& db = i < r - b.rank() ? one : b.dims[i - (r - b.rank())];
    if (da == db) {
      out.dims[i] = da;
    } else if (da.is_static() && da.value == 1) {
      out.dims[i] = db;
    } else if (db.is_static() && db.value == 1) {
      out.dims[i] = da;
    } else if (da.is_static() && db.is_static()) {
      return std::nullopt;
    } else if (da.is_static()) {
      out.dims[i] = da;  // the symbol must equal it (or be 1)
    } else if (db.is_static()) {
      out.dims[i] = db;
    } else {
      out.dims[i] = Dim::unknown();
    }
  }
  return out;
}

int64_t numel_of(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (auto d : dims) n *= d;
  return n;
}

std::string dims_str(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ",";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

}  // namespace kiln
