// The loop nests around a kernel body (kernel_body.h). Every kernel has up to three paths, tried
// in order; each specialised one first checks at run time that the layout it was compiled for
// holds (rank and strides), so a kernel stays correct for any out_dims and strides:
//   flat     every input full-size contiguous or a single value: one vectorised loop over i;
//   rows     the dims from K on are walked contiguously or not at all by every input (conv
//            bias [C,1,1], excitation [N,C,1,1], row vector [N] against [M,N]): per row, one
//            offset per input from the outer dims, then a vectorised loop along the row;
//   general  any layout: per run of the last dim, offsets from in_strides, then a strided loop.
// A node whose operands are channel-blocked (`y_blocked`) gets one path instead, blocked_path.
#include "kiln/codegen/emit.h"

#include <set>

#include "kernel_body.h"
#include "kiln/ir/sha256.h"
#include "op_emit.h"

namespace kiln::codegen {
namespace {

constexpr const char* kSym = "@SYM@";

// Output dims whose size may differ from 1 (the only ones strides matter for).
std::vector<bool> dims_that_matter(const KernelBody& kb) {
  std::vector<bool> m(kb.rank);
  for (int d = 0; d < kb.rank; ++d) m[d] = !(kb.out_shape[d].is_static() && kb.out_shape[d].value == 1);
  return m;
}

// How source `s` walks output dims [from, to): 1 = along every dim that matters, 0 = along none,
// -1 = mixed.
int walk(const Source& s, const std::vector<bool>& matter, int from, int to) {
  bool all = true, none = true;
  for (int d = from; d < to; ++d) {
    if (!matter[d]) continue;
    all = all && s.moves[d];
    none = none && !s.moves[d];
  }
  return all ? 1 : (none ? 0 : -1);
}

// The smallest K >= 1 with every source walking [K, rank) uniformly and some dim there
// mattering; 0 when no such K exists (then flat or general covers the kernel).
int rows_split(const KernelBody& kb, const std::vector<bool>& matter) {
  for (int k = 1; k < kb.rank; ++k) {
    bool any_matter = false;
    for (int d = k; d < kb.rank; ++d) any_matter = any_matter || matter[d];
    if (!any_matter) return 0;
    bool uniform = true;
    for (const Source& s : kb.sources) uniform = uniform && walk(s, matter, k, kb.rank) != -1;
    if (uniform) return k;
  }
  return 0;
}

std::string strides_of(const Source& s) { return s.node_input >= 0 ? str_cat("a->in_strides[", s.node_input, "]") : str_cat(s.name, "_strides"); }

// Run-time check that source `s` walks dims [from, rank) as compiled (baked arrays always do).
std::string layout_check(const Source& s, int walk_kind, int from, int rank) {
  if (s.node_input < 0) return "";
  return str_cat(" &&\n      kiln_strides_", walk_kind == 1 ? "contiguous" : "zero", "(", strides_of(s), ", a->out_dims, ",
                 from, ", ", rank, ")");
}

std::string output_args(const KernelBody& kb, const std::string& index, const std::string& prefix = "out") {
  std::string a;
  for (size_t k = 0; k < kb.out_dtypes.size(); ++k) a += str_cat(", ", prefix, k, "[", index, "]");
  return a;
}

// "body(" + args + outputs + ");" without a leading comma when there are no sources.
std::string call_body(const std::string& args, const std::string& outs) {
  std::string all = args + outs;
  if (all.rfind(", ", 0) == 0) all = all.substr(2);
  return str_cat("body(", all, ");");
}

std::string flat_path(const KernelBody& kb, const std::vector<bool>& matter) {
  std::string checks = str_cat("a->rank == ", kb.rank), hoisted, args;
  for (const Source& s : kb.sources) {
    const int w = walk(s, matter, 0, kb.rank);
    checks += layout_check(s, w, 0, kb.rank);
    if (w == 1) {
      args += str_cat(", ", load(s, s.name, "i"));
    } else {
      hoisted += str_cat("    const ", compute_ctype(s.dtype), " s", s.param, " = ", load(s, s.name, "0"), ";\n");
      args += str_cat(", s", s.param);
    }
  }
  return str_cat("  // Flat: every input is full-size or a single value.\n  if (", checks, ") {\n", hoisted,
                 "    KILN_VECTOR_LOOP\n    for (int64_t i = begin; i < end; ++i) ", call_body(args, output_args(kb, "i")),
                 "\n    return;\n  }\n");
}

std::string rows_path(const KernelBody& kb, const std::vector<bool>& matter, int k) {
  std::string checks = str_cat("a->rank == ", kb.rank), offsets, start, step, wrap, per_row, args;
  for (const Source& s : kb.sources) {
    const int w = walk(s, matter, k, kb.rank);
    checks += layout_check(s, w, k, kb.rank);
    const bool outer = walk(s, matter, 0, k) != 0;
    const std::string off = outer ? str_cat("o", s.param) : "0";
    if (outer) {
      offsets += str_cat(", o", s.param, " = 0");
      start += str_cat("      o", s.param, " += at[q] * ", strides_of(s), "[q];\n");
      step += str_cat("        o", s.param, " += ", strides_of(s), "[q];\n");
      wrap += str_cat("        o", s.param, " -= d[q] * ", strides_of(s), "[q];\n");
    }
    if (w == 1) {
      per_row += str_cat("      const ", element_ctype(s), "* p", s.param, " = ", s.name, " + ", off, ";\n");
      args += str_cat(", ", load(s, str_cat("p", s.param), "t"));
    } else {
      per_row += str_cat("      const ", compute_ctype(s.dtype), " s", s.param, " = ", load(s, s.name, off), ";\n");
      args += str_cat(", s", s.param);
    }
  }
  for (size_t o = 0; o < kb.out_dtypes.size(); ++o)
    per_row += str_cat("      ", storage_ctype(kb.out_dtypes[o]), "* w", o, " = out", o, " + (i - j);\n");
  std::string text = str_cat("  // Rows: from dim ", k, " on, every input walks the row contiguously or not at all.\n  if (",
                             checks, ") {\n    const int64_t* d = a->out_dims;\n    int64_t inner = 1;\n    for (int q = ", k,
                             "; q < ", kb.rank, "; ++q) inner *= d[q];\n    int64_t row = begin / inner, j = begin - row * inner;\n");
  // Inputs that move along the outer dims: offsets at the first row, then an odometer per row
  // (no divisions per row: rows can be as short as 7x7).
  if (!offsets.empty())
    text += str_cat("    int64_t at[", k, "], ", offsets.substr(2), ";\n    for (int64_t r = row, q = ", k - 1,
                    "; q >= 0; --q) {\n      at[q] = r % d[q];\n      r /= d[q];\n", start, "    }\n");
  text += str_cat("    for (int64_t i = begin; i < end; j = 0) {\n",
                  "      const int64_t n = inner - j < end - i ? inner - j : end - i;\n", per_row,
                  "      KILN_VECTOR_LOOP\n      for (int64_t t = j; t < j + n; ++t) ", call_body(args, output_args(kb, "t", "w")),
                  "\n      i += n;\n");
  if (!offsets.empty())
    text += str_cat("      for (int q = ", k - 1, "; q >= 0; --q) {\n", step, "        if (++at[q] < d[q]) break;\n", wrap,
                    "        at[q] = 0;\n      }\n");
  text += "    }\n    return;\n  }\n";
  return text;
}

std::string general_path(const KernelBody& kb) {
  std::string offsets, decompose, steps, args;
  for (const Source& s : kb.sources) {
    const std::string stride = s.node_input >= 0 ? str_cat(strides_of(s), "[q]")
                                                 : str_cat("kiln_aligned_stride(", strides_of(s), ", ", kb.rank, ", rank, q)");
    const std::string last = s.node_input >= 0
                                 ? str_cat(strides_of(s), "[rank - 1]")
                                 : str_cat("kiln_aligned_stride(", strides_of(s), ", ", kb.rank, ", rank, rank - 1)");
    offsets += str_cat(", o", s.param, " = 0");
    decompose += str_cat("      o", s.param, " += at * ", stride, ";\n");
    steps += str_cat("    const int64_t t", s.param, " = rank > 0 ? ", last, " : 0;\n");
    args += str_cat(", ", load(s, s.name, str_cat("o", s.param, " + t * t", s.param)));
  }
  std::string text =
      "  // General: any out_dims and strides, one run of the last dim at a time.\n"
      "  const int rank = a->rank;\n  const int64_t* d = a->out_dims;\n"
      "  const int64_t last = rank > 0 ? d[rank - 1] : 1;\n"
      "  for (int64_t i = begin; i < end;) {\n"
      "    const int64_t n = last - i % last < end - i ? last - i % last : end - i;\n";
  if (!offsets.empty())
    text += str_cat("    int64_t ", offsets.substr(2), ";\n    for (int64_t r = i, q = rank - 1; q >= 0; --q) {\n",
                    "      const int64_t at = r % d[q];\n      r /= d[q];\n", decompose, "    }\n", steps);
  text += str_cat("    for (int64_t t = 0; t < n; ++t) ", call_body(args, output_args(kb, "i + t")), "\n    i += n;\n  }\n");
  return text;
}

// Channel-blocked operands (the node's `y_blocked`, set by lower/blocked_layout.cpp): every
// output and every full-size input is stored [N][C/8][H][W][8], so element i of the range is
// element i of each of them; the other inputs are per channel ([N|1, C|1, 1, 1]: excitation
// scales, biases) or single values, read at n * stride0 + c * stride1 for the 8 channels of
// each block row. The rows of a block (H * W pixels of 8 lanes) start at multiples of 8, so an
// element's lane is its index's low three bits. The vector pragma goes on the loop over blocks
// of 8 (gcc vectorises it once the inner loop is unrolled): on the inner one gcc still checked
// that input and output do not overlap, and in place they do, so it ran the scalar loop
// (efficientnet_b0's 112x112 excitation product 0.11 ms instead of 0.02). No other path: NCHW
// loops would read blocks as planes.
std::string blocked_path(const Node& fused, const KernelBody& kb, const std::vector<bool>& matter) {
  KILN_CHECK(kb.rank == 4, fused.describe(), ": a channel-blocked kernel needs rank-4 outputs, not ", kb.out_shape.str());
  std::string lanes, args8, args1;
  for (const Source& s : kb.sources) {
    const bool spatial = (matter[2] && s.moves[2]) || (matter[3] && s.moves[3]);
    if (spatial) {
      KILN_CHECK(s.node_input >= 0 && walk(s, matter, 0, kb.rank) == 1, fused.describe(), ": input ", s.name,
                 " broadcasts over the pixels but not the channels: it cannot be read channel-blocked");
      args8 += str_cat(", ", load(s, s.name, "t + l"));
      args1 += str_cat(", ", load(s, s.name, "t"));
      continue;
    }
    lanes += str_cat("    ", compute_ctype(s.dtype), " v", s.param, "[8];\n    for (int l = 0; l < 8; ++l) v", s.param, "[l] = ",
                     load(s, s.name, str_cat("n * ", strides_of(s), "[0] + (c0 + l) * ", strides_of(s), "[1]")), ";\n");
    args8 += str_cat(", v", s.param, "[l]");
    args1 += str_cat(", v", s.param, "[t & 7]");
  }
  const std::string one = call_body(args1, output_args(kb, "t"));
  return str_cat(
      "  // Blocked: outputs and full-size inputs [N][C/8][H][W][8], the others per channel.\n",
      "  const int64_t* d = a->out_dims;\n  const int64_t row_len = d[2] * d[3] * 8, blocks = d[1] / 8;\n",
      "  for (int64_t i = begin; i < end;) {\n",
      "    const int64_t row = i / row_len, stop = (row + 1) * row_len < end ? (row + 1) * row_len : end;\n",
      "    const int64_t n = row / blocks, c0 = (row - n * blocks) * 8;\n", lanes,
      "    int64_t t = i;\n    for (; t < stop && (t & 7) != 0; ++t) ", one, "\n",
      "    KILN_VECTOR_LOOP\n    for (; t + 8 <= stop; t += 8) {\n      for (int l = 0; l < 8; ++l) ",
      call_body(args8, output_args(kb, "t + l")), "\n    }\n    for (; t < stop; ++t) ", one, "\n    i = stop;\n  }\n");
}

std::string pointers(const KernelBody& kb) {
  std::string p;
  for (const Source& s : kb.sources)
    if (s.node_input >= 0)
      p += str_cat("  const ", storage_ctype(s.dtype), "* ", s.name, " = (const ", storage_ctype(s.dtype), "*)a->inputs[",
                   s.node_input, "];\n");
  for (size_t o = 0; o < kb.out_dtypes.size(); ++o)
    p += str_cat("  ", storage_ctype(kb.out_dtypes[o]), "* out", o, " = (", storage_ctype(kb.out_dtypes[o]), "*)a->outputs[", o,
                 "];\n");
  return p;
}

std::string baked_stride_tables(const KernelBody& kb) {
  std::string t;
  for (const Source& s : kb.sources) {
    if (s.node_input >= 0) continue;
    std::string items;
    for (int64_t v : s.baked_strides) items += str_cat(items.empty() ? "" : ", ", v);
    t += str_cat("static const int64_t ", s.name, "_strides[", std::max(kb.rank, 1), "] = {", items.empty() ? "0" : items, "};\n");
  }
  return t;
}

}  // namespace

GeneratedKernel emit_fused_kernel(const Node& fused, const EmitOptions& opt) {
  KILN_CHECK(fused.op == "FusedElementwise" && fused.domain == "kiln", fused.describe(),
             ": codegen takes kiln.FusedElementwise nodes");
  KernelBody kb = build_kernel_body(fused);
  const std::vector<bool> matter = dims_that_matter(kb);
  std::string paths, layout = "general";
  const bool blocked = fused.attr_i("y_blocked", 0) != 0;
  if (blocked) {
    layout = "channel-blocked";
  } else if (opt.specialise) {
    bool flat = true;
    for (const Source& s : kb.sources) flat = flat && walk(s, matter, 0, kb.rank) != -1;
    const int k = flat ? 0 : rows_split(kb, matter);
    if (flat) paths += flat_path(kb, matter);
    if (k > 0) paths += rows_path(kb, matter, k);
    layout = flat ? "flat, general" : (k > 0 ? str_cat("rows from dim ", k, ", general") : "general");
  }
  std::string text = str_cat(
      "// ---- ", kSym, ": compiled for output ", kb.out_shape.str(), "; paths: ", layout, "\n// ", kb.signature, "\n",
      "namespace ", kSym, "_impl {\n", kb.definitions, baked_stride_tables(kb), kb.body_fn, "}  // namespace ", kSym,
      "_impl\n\nextern \"C\" void ", kSym, "(const kiln_fused_args* a, int64_t begin, int64_t end) {\n  using namespace ",
      kSym, "_impl;\n  if (begin >= end) return;\n", pointers(kb), paths,
      blocked ? blocked_path(fused, kb, matter) : general_path(kb), "}\n");
  GeneratedKernel k;
  k.symbol = opt.symbol.empty() ? "kiln_fe_" + sha256_hex(text).substr(0, 16) : opt.symbol;
  for (size_t at = text.find(kSym); at != std::string::npos; at = text.find(kSym, at + k.symbol.size()))
    text.replace(at, std::string_view(kSym).size(), k.symbol);
  k.source = std::move(text);
  return k;
}

std::vector<GeneratedKernel> emit_graph_kernels(Graph& g, const EmitOptions& opt, std::vector<std::string>* skipped) {
  KILN_CHECK(opt.symbol.empty(), "emit_graph_kernels: symbols come from the kernels' text, not EmitOptions::symbol");
  std::vector<GeneratedKernel> kernels;
  std::set<std::string> seen;
  auto add = [&](GeneratedKernel k) {
    if (seen.insert(k.symbol).second) kernels.push_back(std::move(k));
  };
  for (const auto& n : g.nodes()) {
    if (n->op == "FusedElementwise" && n->domain == "kiln") {
      // The fusion passes cannot ask codegen (they come before it), so a body holding an op this
      // emitter does not translate is left without a kernel: the runtime then runs its body with
      // the reference kernels, and the report says so.
      std::string why;
      const Attribute* body = n->find_attr("body");
      bool ok = body && body->kind() == AttrKind::Graph;
      if (ok)
        for (const auto& bn : body->g()->nodes())
          if (!(ok = can_generate(*bn, &why))) break;
      // The reference kernels read NCHW: a channel-blocked node must get its kernel.
      KILN_CHECK(ok || n->attr_i("y_blocked", 0) == 0, n->describe(), ": channel-blocked, but codegen cannot translate ",
                 "its body: ", why);
      if (!ok) {
        if (skipped) skipped->push_back(n->describe() + ": " + (why.empty() ? "no body graph" : why));
        continue;
      }
      GeneratedKernel k = emit_fused_kernel(*n, opt);
      n->attrs["kernel"] = k.symbol;
      add(std::move(k));
      continue;
    }
    for (Graph* sub : n->subgraphs())
      for (GeneratedKernel& k : emit_graph_kernels(*sub, opt, skipped)) add(std::move(k));
  }
  return kernels;
}

}  // namespace kiln::codegen
