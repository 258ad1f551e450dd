// Einsum: parses the equation into one label per operand dim (letters, plus one label per
// ellipsis dim, right-aligned like numpy broadcasting), then either
//  - maps a two-operand contraction onto batched SGEMM (permute to [batch, m, k] x
//    [batch, k, n], multiply, permute back), e.g. "bhid,bhjd->bhij", or
//  - runs the general sum over all labels (diagonals, traces, broadcasting, 1..n operands).
#include <algorithm>
#include <array>

#include "nn_common.h"

namespace kiln::ops {
namespace {

constexpr int kLetters = 52;  // 'A'-'Z' then 'a'-'z' (ASCII order, used for implicit output)

struct Spec {
  std::vector<std::vector<int>> in;  // labels of each operand dim
  std::vector<int> out;              // labels of each output dim
  int num_labels = 0;
};

int letter_label(char ch) { return ch >= 'A' && ch <= 'Z' ? ch - 'A' : ch - 'a' + 26; }

Spec parse(const Node& n, const std::vector<size_t>& ranks) {
  std::string eq;
  for (char ch : n.attr_s("equation", "")) if (ch != ' ') eq += ch;
  KILN_CHECK(!eq.empty(), n.describe(), ": attribute 'equation' is required");
  size_t arrow = eq.find("->");
  std::string lhs = eq.substr(0, arrow);
  std::vector<std::string> terms;
  for (size_t start = 0;;) {
    size_t comma = lhs.find(',', start);
    terms.push_back(lhs.substr(start, comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILN_CHECK(terms.size() == ranks.size(), n.describe(), ": equation '", eq, "' has ", terms.size(),
             " operands, node has ", ranks.size(), " inputs");
  // Letters and ellipsis position of a term; throws on anything else.
  auto split = [&](const std::string& t, std::vector<int>& before, std::vector<int>& after) {
    bool ell = false;
    for (size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "...") == 0) {
        KILN_CHECK(!ell, n.describe(), ": equation '", eq, "' has two ellipses in one term");
        ell = true, i += 2;
        continue;
      }
      char ch = t[i];
      KILN_CHECK((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z'), n.describe(), ": bad character '", ch,
                 "' in equation '", eq, "'");
      (ell ? after : before).push_back(letter_label(ch));
    }
    return ell;
  };
  Spec s;
  size_t ell_rank = 0;
  std::vector<std::array<std::vector<int>, 2>> parts(terms.size());
  std::vector<bool> has_ell(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    has_ell[i] = split(terms[i], parts[i][0], parts[i][1]);
    size_t letters = parts[i][0].size() + parts[i][1].size();
    KILN_CHECK(ranks[i] >= letters && (has_ell[i] || ranks[i] == letters), n.describe(), ": operand ", i,
               " has rank ", ranks[i], ", equation term '", terms[i], "' does not match");
    if (has_ell[i]) ell_rank = std::max(ell_rank, ranks[i] - letters);
  }
  auto ell_labels = [&](size_t count) {
    std::vector<int> r;
    for (size_t j = ell_rank - count; j < ell_rank; ++j) r.push_back(kLetters + static_cast<int>(j));
    return r;
  };
  std::vector<int> count(kLetters, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    std::vector<int> labels = parts[i][0];
    if (has_ell[i]) {
      auto e = ell_labels(ranks[i] - parts[i][0].size() - parts[i][1].size());
      labels.insert(labels.end(), e.begin(), e.end());
    }
    labels.insert(labels.end(), parts[i][1].begin(), parts[i][1].end());
    for (int l : labels)
      if (l < kLetters) ++count[l];
    s.in.push_back(labels);
  }
  if (arrow != std::string::npos) {
    std::vector<int> before, after;
    bool ell = split(eq.substr(arrow + 2), before, after);
    s.out = before;
    if (ell) {
      auto e = ell_labels(ell_rank);
      s.out.insert(s.out.end(), e.begin(), e.end());
    }
    s.out.insert(s.out.end(), after.begin(), after.end());
    for (int l : s.out)
      KILN_CHECK(l >= kLetters || count[l] > 0, n.describe(), ": output label of '", eq, "' is not in any operand");
    for (size_t i = 0; i < s.out.size(); ++i)
      KILN_CHECK(std::count(s.out.begin(), s.out.end(), s.out[i]) == 1, n.describe(), ": equation '", eq,
                 "' repeats an output label");
  } else {
    // Implicit output: ellipsis dims, then letters used exactly once, in ASCII order.
    s.out = ell_labels(ell_rank);
    for (int l = 0; l < kLetters; ++l)
      if (count[l] == 1) s.out.push_back(l);
  }
  s.num_labels = kLetters + static_cast<int>(ell_rank);
  return s;
}

void infer_einsum(InferContext& c) {
  std::vector<size_t> ranks;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    if (!c.in_shape(i).rank_known) return c.set_output(0, c.in_dtype(0), Shape::unknown_rank());
    ranks.push_back(c.in_shape(i).rank());
  }
  Spec s = parse(c.node(), ranks);
  std::vector<Dim> dim(s.num_labels, Dim::unknown());
  std::vector<bool> seen(s.num_labels, false);
  for (size_t i = 0; i < s.in.size(); ++i)
    for (size_t d = 0; d < s.in[i].size(); ++d) {
      int l = s.in[i][d];
      const Dim& x = c.in_shape(i)[d];
      if (!seen[l] || dim[l] == Dim(1)) {
        dim[l] = x, seen[l] = true;
      } else if (x.is_static() && dim[l].is_static() && x.value != dim[l].value && x.value != 1) {
        c.fail(str_cat("label sizes differ: ", dim[l].value, " vs ", x.value, " (operand ", i, ")"));
      }
    }
  std::vector<Dim> out;
  for (int l : s.out) out.push_back(dim[l]);
  c.set_output(0, c.in_dtype(0), Shape(out));
}

// Label sizes from the operands; ellipsis dims may broadcast from 1.
std::vector<int64_t> label_sizes(const Spec& s, const std::vector<Tensor>& ins, const Node& n) {
  std::vector<int64_t> size(s.num_labels, -1);
  for (size_t i = 0; i < ins.size(); ++i)
    for (size_t d = 0; d < s.in[i].size(); ++d) {
      int l = s.in[i][d];
      int64_t v = ins[i].dim(d);
      if (size[l] < 0 || size[l] == 1) size[l] = v;
      else KILN_CHECK(v == size[l] || (v == 1 && l >= kLetters), n.describe(), ": einsum dim sizes differ (", v,
                      " vs ", size[l], ") for one label");
    }
  return size;
}

template <typename T>
Tensor einsum_general(const Spec& s, const std::vector<Tensor>& ins, const std::vector<int64_t>& size,
                      DType dtype) {
  // Iterate output labels (outer) and reduced labels (inner); strides per operand per label.
  std::vector<int> order = s.out;
  std::vector<bool> is_out(s.num_labels, false);
  for (int l : s.out) is_out[l] = true;
  for (int l = 0; l < s.num_labels; ++l)
    if (!is_out[l] && size[l] >= 0) order.push_back(l);
  size_t L = order.size(), nin = ins.size();
  std::vector<std::vector<int64_t>> stride(nin, std::vector<int64_t>(L, 0));
  for (size_t i = 0; i < nin; ++i) {
    std::vector<int64_t> st = strides_of(ins[i].dims());
    for (size_t d = 0; d < s.in[i].size(); ++d) {
      size_t pos = std::find(order.begin(), order.end(), s.in[i][d]) - order.begin();
      if (ins[i].dim(d) != 1) stride[i][pos] += st[d];  // repeated labels walk the diagonal
    }
  }
  std::vector<int64_t> out_dims;
  for (int l : s.out) out_dims.push_back(size[l]);
  Tensor Y(dtype, out_dims);
  T* y = Y.data<T>();
  int64_t total = 1;
  for (int l : order) total *= size[l];
  int64_t inner = total / std::max<int64_t>(1, Y.numel());
  if (Y.numel() == 0 || total == 0) return Y;
  std::vector<int64_t> idx(L, 0), off(nin, 0);
  std::vector<const T*> ptr(nin);
  for (size_t i = 0; i < nin; ++i) ptr[i] = ins[i].data<T>();
  using Acc = std::conditional_t<std::is_floating_point_v<T>, double, T>;
  for (int64_t o = 0; o < Y.numel(); ++o) {
    Acc acc = 0;
    for (int64_t r = 0; r < inner; ++r) {
      Acc prod = 1;
      for (size_t i = 0; i < nin; ++i) prod *= static_cast<Acc>(ptr[i][off[i]]);
      acc += prod;
      // Advance the odometer (innermost label last).
      for (int64_t d = static_cast<int64_t>(L) - 1; d >= 0; --d) {
        for (size_t i = 0; i < nin; ++i) off[i] += stride[i][d];
        if (++idx[d] < size[order[d]]) break;
        for (size_t i = 0; i < nin; ++i) off[i] -= stride[i][d] * size[order[d]];
        idx[d] = 0;
      }
    }
    y[o] = static_cast<T>(acc);
  }
  return Y;
}

// Copies x (dims) permuted so that output dim i is input dim perm[i].
template <typename T>
Tensor permute(const Tensor& x, const std::vector<size_t>& perm) {
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) identity = identity && perm[i] == i;
  if (identity) return x;
  std::vector<int64_t> od;
  for (size_t p : perm) od.push_back(x.dim(p));
  Tensor y(x.dtype(), od);
  std::vector<int64_t> st = strides_of(x.dims()), idx(perm.size(), 0);
  const T* src = x.data<T>();
  T* dst = y.data<T>();
  int64_t off = 0;
  for (int64_t i = 0; i < y.numel(); ++i) {
    dst[i] = src[off];
    for (int64_t d = static_cast<int64_t>(perm.size()) - 1; d >= 0; --d) {
      off += st[perm[d]];
      if (++idx[d] < od[d]) break;
      off -= st[perm[d]] * od[d];
      idx[d] = 0;
    }
  }
  return y;
}

// Two-operand contraction as batched SGEMM, when every label is plain (no diagonal, no
// broadcast, no label reduced inside one operand). nullopt when it does not apply.
std::optional<Tensor> einsum_matmul(const Spec& s, const std::vector<Tensor>& ins, const std::vector<int64_t>& size,
                                    int threads) {
  if (ins.size() != 2 || ins[0].dtype() != DType::f32) return std::nullopt;
  const auto &la = s.in[0], &lb = s.in[1];
  auto has = [](const std::vector<int>& v, int l) { return std::find(v.begin(), v.end(), l) != v.end(); };
  for (size_t i = 0; i < 2; ++i)
    for (size_t d = 0; d < s.in[i].size(); ++d) {
      int l = s.in[i][d];
      if (std::count(s.in[i].begin(), s.in[i].end(), l) != 1 || ins[i].dim(d) != size[l]) return std::nullopt;
      if (!has(s.in[1 - i], l) && !has(s.out, l)) return std::nullopt;
    }
  std::vector<int> batch, m, n, k;
  for (int l : s.out) (has(la, l) && has(lb, l) ? batch : has(la, l) ? m : n).push_back(l);
  for (int l : la)
    if (has(lb, l) && !has(s.out, l)) k.push_back(l);
  auto pos = [](const std::vector<int>& v, int l) { return static_cast<size_t>(std::find(v.begin(), v.end(), l) - v.begin()); };
  auto prod = [&](const std::vector<int>& v) { int64_t p = 1; for (int l : v) p *= size[l]; return p; };
  std::vector<size_t> pa, pb;
  for (int l : batch) pa.push_back(pos(la, l)), pb.push_back(pos(lb, l));
  for (int l : m) pa.push_back(pos(la, l));
  for (int l : k) pa.push_back(pos(la, l)), pb.push_back(pos(lb, l));
  for (int l : n) pb.push_back(pos(lb, l));
  Tensor A = permute<float>(ins[0], pa), B = permute<float>(ins[1], pb);
  int64_t nb = prod(batch), M = prod(m), N = prod(n), K = prod(k);
  std::vector<int64_t> rdims;
  for (const auto* g : {&batch, &m, &n})
    for (int l : *g) rdims.push_back(size[l]);
  Tensor R(DType::f32, rdims);
  for (int64_t b = 0; b < nb; ++b)
    nn::matmul<float>(false, false, M, N, K, A.data<float>() + b * M * K, B.data<float>() + b * K * N,
                      R.data<float>() + b * M * N, false, threads);
  // R is [batch, m, n]; put its dims in output order.
  std::vector<int> rl = batch;
  rl.insert(rl.end(), m.begin(), m.end());
  rl.insert(rl.end(), n.begin(), n.end());
  std::vector<size_t> po;
  for (int l : s.out) po.push_back(pos(rl, l));
  return permute<float>(R, po);
}

void einsum_kernel(KernelContext& c) {
  const Node& n = c.node();
  DType dt = c.input(0).dtype();
  std::vector<Tensor> ins;
  std::vector<size_t> ranks;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    ins.push_back(nn::compute_input(c.input(i)));
    KILN_CHECK(ins.back().dtype() == ins[0].dtype(), n.describe(), ": operands must share a dtype");
    ranks.push_back(ins.back().rank());
  }
  Spec s = parse(n, ranks);
  std::vector<int64_t> size = label_sizes(s, ins, n);
  if (auto fast = einsum_matmul(s, ins, size, c.threads())) return nn::set_result(c, 0, *fast, dt);
  KILN_DISPATCH_NUMERIC(ins[0].dtype(), n.describe(),
                        nn::set_result(c, 0, einsum_general<T>(s, ins, size, ins[0].dtype()), dt));
}

Cost cost_einsum(const CostContext& c) {
  // One multiply-add per point of the full label space: product of all distinct label sizes.
  std::vector<size_t> ranks;
  for (const auto& d : c.in_dims) ranks.push_back(d.size());
  Spec s = parse(c.node, ranks);
  std::vector<int64_t> size(s.num_labels, 1);
  for (size_t i = 0; i < s.in.size(); ++i)
    for (size_t d = 0; d < s.in[i].size(); ++d) size[s.in[i][d]] = std::max(size[s.in[i][d]], c.in_dims[i][d]);
  double space = 1;
  for (int64_t v : size) space *= static_cast<double>(v);
  Cost k;
  k.flops = 2 * space;
  k.bytes_read = c.io_bytes_read();
  k.bytes_written = c.io_bytes_written();
  return k;
}

}  // namespace

OpDef def_Einsum() {
  return {.name = "Einsum",
          .since = 12,
          .min_inputs = 1,
          .max_inputs = -1,
          .attrs = {{"equation", AttrKind::String, true}},
          .infer = infer_einsum,
          .cost = cost_einsum,
          .kernel = einsum_kernel,
          .doc = "Einstein summation over the operands as given by the equation"};
}

}  // namespace kiln::ops
