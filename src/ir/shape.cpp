#include "kiln/ir/shape.h"

#include <cctype>

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

std::optional<DimExpr> DimExpr::of(const Dim& d) {
  DimExpr e;
  if (d.is_static()) {
    e.constant = d.value;
    return e;
  }
  if (!d.is_symbolic()) return std::nullopt;
  const std::string& s = d.symbol;
  if (s.find_first_of("+-*") == std::string::npos) {  // a plain symbol
    e.terms[s] = 1;
    return e;
  }
  // Terms separated by + or -, each "k*name", "name" or "k".
  size_t i = 0;
  while (i < s.size()) {
    int64_t sign = 1;
    if (s[i] == '+' || s[i] == '-') {
      sign = s[i] == '-' ? -1 : 1;
      ++i;
    }
    size_t end = s.find_first_of("+-", i);
    std::string term = s.substr(i, end == std::string::npos ? std::string::npos : end - i);
    if (term.empty()) return std::nullopt;
    int64_t k = 1;
    std::string name = term;
    if (auto star = term.find('*'); star != std::string::npos) {
      std::string num = term.substr(0, star);
      name = term.substr(star + 1);
      if (num.empty() || num.find_first_not_of("0123456789") != std::string::npos || name.empty()) return std::nullopt;
      k = std::stoll(num);
    }
    if (name.find_first_not_of("0123456789") == std::string::npos) {
      e.constant += sign * k * std::stoll(name);
    } else {
      if (std::isdigit(static_cast<unsigned char>(name[0]))) return std::nullopt;
      e.terms[name] += sign * k;
      if (e.terms[name] == 0) e.terms.erase(name);
    }
    if (end == std::string::npos) break;
    i = end;
  }
  return e;
}

Dim DimExpr::to_dim() const {
  if (terms.empty()) return constant >= 0 ? Dim(constant) : Dim::unknown();
  if (terms.size() == 1 && terms.begin()->second == 1 && constant == 0) return Dim::sym(terms.begin()->first);
  std::string s;
  for (const auto& [name, k] : terms) {
    if (k < 0) s += "-";
    else if (!s.empty()) s += "+";
    int64_t a = k < 0 ? -k : k;
    if (a != 1) s += std::to_string(a) + "*";
    s += name;
  }
  if (constant > 0) s += "+" + std::to_string(constant);
  if (constant < 0) s += std::to_string(constant);
  return Dim::sym(s);
}

DimExpr DimExpr::operator+(const DimExpr& o) const {
  DimExpr r = *this;
  r.constant += o.constant;
  for (const auto& [n, k] : o.terms)
    if ((r.terms[n] += k) == 0) r.terms.erase(n);
  return r;
}

DimExpr DimExpr::operator-(const DimExpr& o) const { return *this + o.scaled(-1); }

DimExpr DimExpr::scaled(int64_t k) const {
  DimExpr r;
  if (k == 0) return r;
  r.constant = constant * k;
  for (const auto& [n, c] : terms) r.terms[n] = c * k;
  return r;
}

Shape bind_dims(const Shape& s, const DimBindings& b) {
  Shape out = s;
  for (auto& d : out.dims) {
    if (!d.is_symbolic()) continue;
    auto it = b.find(d.symbol);
    if (it != b.end()) {
      d = Dim(it->second);
      continue;
    }
    auto e = DimExpr::of(d);
    if (!e || e->terms.size() < 1) continue;
    bool all_bound = true;
    int64_t v = e->constant;
    for (const auto& [name, k] : e->terms) {
      auto bt = b.find(name);
      if (bt == b.end()) {
        all_bound = false;
        break;
      }
      v += k * bt->second;
    }
    if (all_bound && v >= 0 && (e->terms.size() > 1 || e->terms.begin()->second != 1 || e->constant != 0)) d = Dim(v);
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
