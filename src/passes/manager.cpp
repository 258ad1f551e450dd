// PassManager: pipelines by level or from text, verifier and dumps between passes.
#include "kiln/passes/manager.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <ostream>

#include "kiln/ops/op.h"

namespace kiln::passes {
namespace {

// The pipelines of the levels, as data. Each level extends the one below.
const std::vector<std::string>& level_passes(int level) {
  // -O1: cleanup that never makes the graph slower and keeps every op an ONNX op.
  static const std::vector<std::string> o1 = {"fold-constants", "simplify-shapes", "eliminate-identity", "cse",
                                              "dce"};
  // -O2: algebraic rewrites and fusion into kiln ops (QDQ patterns into quantized ops before the
  // float fusions, which then see only what stays float); dce sweeps what the fusions left.
  static const std::vector<std::string> o2 = [] {
    std::vector<std::string> p = o1;
    for (const char* n : {"fold-batchnorm", "fold-qdq", "fold-qdq-lookup", "fuse-layernorm", "fuse-attention",
                          "fold-attention-views", "fuse-epilogue",
                          "fuse-elementwise", "dce"})
      p.push_back(n);
    return p;
  }();
  // -O3: blocked layouts for convolutions, transposes pushed to the edges.
  static const std::vector<std::string> o3 = [] {
    std::vector<std::string> p = o2;
    p.push_back("layout");
    return p;
  }();
  static const std::vector<std::string> none;
  switch (level) {
    case 0: return none;
    case 1: return o1;
    case 2: return o2;
    case 3: return o3;
  }
  throw Error(str_cat("optimization level ", level, " does not exist (use 0, 1, 2 or 3)"));
}

std::string known_list(const PassRegistry& r) {
  std::string s;
  for (const auto& n : r.names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::string trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

// dtype and shape of every value, to compare with what inference says after a pass.
struct TypeSnapshot {
  std::vector<std::pair<const Value*, std::pair<DType, Shape>>> entries;
  static void collect(const Graph& g, TypeSnapshot& s) {
    for (const auto& v : g.values()) s.entries.push_back({v.get(), {v->dtype, v->shape}});
    for (const auto& n : g.nodes())
      for (const Graph* sg : n->subgraphs()) collect(*sg, s);
  }
};

bool shapes_conflict(const Shape& declared, const Shape& inferred) {
  if (!declared.rank_known || !inferred.rank_known) return false;
  if (declared.rank() != inferred.rank()) return true;
  for (size_t i = 0; i < declared.rank(); ++i)
    if (declared[i].is_static() && inferred[i].is_static() && declared[i].value != inferred[i].value) return true;
  return false;
}

// Shapes of what a pass created or rewired are re-inferred before the next pass looks.
void reinfer(Model& m, const std::string& pass, const DimBindings& bindings) {
  try {
    ops::infer_shapes(m, bindings);
  } catch (const Error& e) {
    throw Error(str_cat("after pass '", pass, "': shape inference fails: ", e.what()));
  }
}

// Runs the verifier and shape inference; a failure or a disagreement names the pass.
void verify_after(Model& m, const std::string& pass, const DimBindings& bindings) {
  try {
    ops::verify_model(m);
  } catch (const Error& e) {
    throw Error(str_cat("after pass '", pass, "': invalid model: ", e.what()));
  }
  TypeSnapshot before;
  TypeSnapshot::collect(*m.graph, before);
  reinfer(m, pass, bindings);
  for (const auto& [v, type] : before.entries) {
    const auto& [dt, shape] = type;
    KILN_CHECK(dt == DType::undefined || v->dtype == dt, "after pass '", pass, "': value '", v->name, "' is ",
               dtype_name(dt), " but its producer makes ", dtype_name(v->dtype));
    KILN_CHECK(!shapes_conflict(shape, v->shape), "after pass '", pass, "': value '", v->name, "' has shape ",
               shape.str(), " but inference gives ", v->shape.str());
  }
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f.write(text.data(), static_cast<std::streamsize>(text.size()));
  f.close();
  KILN_CHECK(f.good(), path, ": cannot write");
}

std::string dump_name(size_t index, const std::string& pass) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%02zu-", index);
  return buf + pass + ".kir";
}

}  // namespace

std::vector<std::string> pipeline_for_level(int level, const PassRegistry& registry, std::vector<std::string>* notes) {
  std::vector<std::string> out;
  for (const auto& name : level_passes(level)) {
    if (registry.has(name)) {
      out.push_back(name);
    } else if (notes) {
      notes->push_back(str_cat("-O", level, ": pass '", name, "' is not built into this kiln; skipped"));
    }
  }
  return out;
}

std::vector<PipelineStep> parse_pipeline(std::string_view text) {
  std::vector<PipelineStep> steps;
  size_t start = 0;
  for (;;) {
    size_t comma = text.find(',', start);
    std::string item = trim(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    PipelineStep s;
    if (!item.empty() && item.back() == '*') {
      s.to_fixed_point = true;
      item = trim(item.substr(0, item.size() - 1));
    }
    KILN_CHECK(!item.empty(), "pipeline '", text, "': empty pass name at position ", start);
    s.pass = item;
    steps.push_back(std::move(s));
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return steps;
}

PassManager PassManager::from_options(const PipelineOptions& opt, const PassRegistry& registry,
                                      std::vector<std::string>* notes) {
  for (const auto& d : opt.disabled)
    KILN_CHECK(registry.has(d), "--disable-pass: unknown pass '", d, "' (known passes: ", known_list(registry), ")");
  std::vector<PipelineStep> steps;
  if (!trim(opt.passes).empty()) {
    steps = parse_pipeline(opt.passes);
    for (const auto& s : steps)
      KILN_CHECK(registry.has(s.pass), "--passes: unknown pass '", s.pass, "' (known passes: ", known_list(registry),
                 ")");
  } else {
    for (auto& n : pipeline_for_level(opt.opt_level, registry, notes)) steps.push_back({n, false});
  }
  PassManager pm(registry);
  for (const auto& s : steps) {
    if (std::find(opt.disabled.begin(), opt.disabled.end(), s.pass) != opt.disabled.end()) continue;
    pm.add(s.pass, s.to_fixed_point);
  }
  pm.verify_each_ = opt.verify_each;
  pm.print_after_all_ = opt.print_after_all;
  pm.dump_dir_ = opt.dump_dir;
  pm.print_options_ = opt.print_options;
  return pm;
}

void PassManager::add(std::string_view name, bool to_fixed_point) {
  steps_.push_back(Step{registry_->create(name), to_fixed_point});
}

void PassManager::add(std::unique_ptr<Pass> pass, bool to_fixed_point) {
  KILN_CHECK(pass != nullptr, "PassManager::add: null pass");
  steps_.push_back(Step{std::move(pass), to_fixed_point});
}

std::vector<std::string> PassManager::pass_names() const {
  std::vector<std::string> out;
  for (const auto& s : steps_) out.emplace_back(s.pass->name());
  return out;
}

std::vector<PassRecord> PassManager::run(Model& m, PassContext& ctx) const {
  std::vector<PassRecord> records;
  if (!dump_dir_.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(dump_dir_, ec);
    KILN_CHECK(!ec, dump_dir_, ": cannot create directory: ", ec.message());
    write_file(dump_dir_ + "/" + dump_name(0, "input"), print_model(m, print_options_));
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    const Step& step = steps_[i];
    PassRecord r;
    r.pass = std::string(step.pass->name());
    r.nodes_before = count_nodes(*m.graph);
    r.rounds = 0;
    for (;;) {
      auto t0 = std::chrono::steady_clock::now();
      bool changed = step.pass->run(m, ctx);
      r.ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      ++r.rounds;
      r.changed |= changed;
      if (changed) {
        if (verify_each_) {
          verify_after(m, r.pass, ctx.bindings);
        } else {
          reinfer(m, r.pass, ctx.bindings);
        }
      }
      if (!changed || !step.to_fixed_point || r.rounds >= kMaxFixedPointRounds) break;
    }
    r.nodes_after = count_nodes(*m.graph);
    if (print_after_all_)
      *print_after_all_ << "// ---- after " << r.pass << (r.changed ? "" : " (unchanged)") << " ----\n"
                        << print_model(m, print_options_) << "\n";
    if (!dump_dir_.empty()) write_file(dump_dir_ + "/" + dump_name(i + 1, r.pass), print_model(m, print_options_));
    records.push_back(std::move(r));
  }
  return records;
}

size_t count_nodes(const Graph& g) {
  size_t n = g.nodes().size();
  for (const auto& node : g.nodes())
    for (const Graph* sg : node->subgraphs()) n += count_nodes(*sg);
  return n;
}

std::string format_pass_table(const std::vector<PassRecord>& records) {
  std::string out = str_cat("pass                 changed        ms   nodes\n");
  double total_ms = 0;
  for (const auto& r : records) {
    char line[160];
    std::snprintf(line, sizeof line, "%-20s %-7s %9.2f   %zu -> %zu%s\n", r.pass.c_str(), r.changed ? "yes" : "no",
                  r.ms, r.nodes_before, r.nodes_after,
                  r.rounds > 1 ? str_cat("  (", r.rounds, " rounds)").c_str() : "");
    out += line;
    total_ms += r.ms;
  }
  if (!records.empty()) {
    char line[160];
    std::snprintf(line, sizeof line, "%-20s %-7s %9.2f   %zu -> %zu\n", "total", "", total_ms,
                  records.front().nodes_before, records.back().nodes_after);
    out += line;
  }
  return out;
}

}  // namespace kiln::passes
