// `kiln perf`: the analytic model (see perf_model.h for what it assumes).
#include "kiln/analysis/perf_model.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "kiln/ir/error.h"
#include "kiln/ops/op.h"
#include "kiln/runtime/executable.h"
#include "perf_cpu.h"
#include "perf_graph.h"

namespace kiln::analysis {

namespace pg = perf_graph;

std::string_view bound_name(Bound b) {
  switch (b) {
    case Bound::compute: return "compute";
    case Bound::memory: return "memory";
    case Bound::overhead: return "overhead";
  }
  return "?";
}

const char* bound_colour(Bound b) {
  switch (b) {
    case Bound::compute: return "#d62728";
    case Bound::memory: return "#1f77b4";
    case Bound::overhead: return "#7f7f7f";
  }
  return "#000";
}

Bound OpTime::bound() const {
  if (launch_s > compute_s && launch_s > memory_s) return Bound::overhead;
  return compute_s >= memory_s ? Bound::compute : Bound::memory;
}

OpTime op_time(double flops, double bytes, double peak_flops, const Chip& chip) {
  KILN_CHECK(peak_flops > 0 && chip.memory_gbs > 0, chip.id, ": peak and memory bandwidth must be positive");
  OpTime t;
  t.compute_s = flops / peak_flops;
  t.memory_s = bytes / (chip.memory_gbs * 1e9);
  t.launch_s = chip.launch_overhead_us * 1e-6;
  return t;
}

// ---- binding the batch --------------------------------------------------------------

namespace {
void snapshot_values(const Graph& g, std::vector<std::pair<Value*, Shape>>& out) {
  for (const auto& v : g.values()) out.emplace_back(v.get(), v->shape);
  for (const auto& n : g.nodes())
    for (Graph* sg : n->subgraphs()) snapshot_values(*sg, out);
}
}  // namespace

BatchBinder::BatchBinder(Model& m, const std::string& batch_dim) : m_(m) {
  KILN_CHECK(m.graph != nullptr, "perf: model has no graph");
  snapshot_values(*m.graph, snapshot_);
  for (Value* v : m.graph->inputs) {
    if (!v->shape.rank_known || v->shape.rank() == 0) continue;
    std::vector<size_t> pos;
    if (batch_dim.empty()) {
      pos.push_back(0);
    } else {
      for (size_t i = 0; i < v->shape.rank(); ++i)
        if (v->shape.dims[i].symbol == batch_dim) pos.push_back(i);
    }
    for (size_t i : pos) {
      const Dim& d = v->shape.dims[i];
      if (d.is_symbolic() && std::find(batch_symbols_.begin(), batch_symbols_.end(), d.symbol) == batch_symbols_.end())
        batch_symbols_.push_back(d.symbol);
    }
    if (!pos.empty()) batch_positions_.emplace_back(v, std::move(pos));
  }
  if (!batch_dim.empty())
    KILN_CHECK(!batch_positions_.empty(), "--dim ", batch_dim, ": no model input has a dim named '", batch_dim, "'");
  KILN_CHECK(!batch_positions_.empty(), "perf: the model has no input with a dim to batch");
  // Every other dynamic input dim must be fixed by the user: the model cannot guess it.
  for (Value* v : m.graph->inputs) {
    if (!v->shape.rank_known) continue;
    auto bp = std::find_if(batch_positions_.begin(), batch_positions_.end(), [&](const auto& e) { return e.first == v; });
    for (size_t i = 0; i < v->shape.rank(); ++i) {
      const Dim& d = v->shape.dims[i];
      bool batch = bp != batch_positions_.end() && std::count(bp->second.begin(), bp->second.end(), i);
      if (batch || d.is_static()) continue;
      if (d.is_symbolic() && std::count(batch_symbols_.begin(), batch_symbols_.end(), d.symbol)) continue;
      throw Error(str_cat("input ", v->name, " dim ", i, " ('", d.str(), "') is dynamic: fix it with --dim ",
                          d.is_symbolic() ? d.symbol : "NAME", "=N (or name the batch dim with --dim NAME)"));
    }
  }
}

BatchBinder::~BatchBinder() {
  for (auto& [v, s] : snapshot_) v->shape = s;
}

void BatchBinder::bind(int64_t batch) {
  KILN_CHECK(batch >= 1, "perf: batch must be at least 1, got ", batch);
  for (auto& [v, s] : snapshot_) v->shape = s;
  for (auto& [v, pos] : batch_positions_)
    for (size_t i : pos) v->shape.dims[i] = Dim(batch);
  DimBindings b;
  for (const auto& s : batch_symbols_) b[s] = batch;
  try {
    ops::infer_shapes(m_, b);
  } catch (const Error& e) {
    throw Error(str_cat("at batch ", batch, ": ", e.what(), " (does the model fix its batch size?)"));
  }
}

// ---- one batch ------------------------------------------------------------------------

namespace {

double initializer_bytes(const Value& v, Precision p) {
  if (!v.initializer) return 0;
  double width = dtype_is_float(v.dtype) ? precision_bytes(p) : static_cast<double>(dtype_size(v.dtype));
  return static_cast<double>(v.initializer->numel()) * width;
}

double weight_bytes(const Graph& g, Precision p) {
  double total = 0;
  for (const Value* v : g.initializers)
    if (v) total += initializer_bytes(*v, p);
  for (const auto& n : g.nodes())
    for (Graph* sg : n->subgraphs()) total += weight_bytes(*sg, p);
  return total;
}

// The op table's bytes with float tensors re-sized to the target precision: each tensor's
// share of the node's traffic is scaled by (target width / stored width).
double scaled_bytes(const Node& n, double table_bytes, Precision p) {
  double stored = 0, scaled = 0;
  for (const auto* list : {&n.inputs, &n.outputs})
    for (const Value* v : *list)
      if (v) {
        stored += pg::model_bytes(*v);
        scaled += pg::value_bytes(*v, p);
      }
  return stored > 0 ? table_bytes * scaled / stored : table_bytes;
}

// Peak of live activation bytes over the main graph's order. A view shares its source's
// storage (and keeps it alive); folded constants are not activations.
double arena_bytes(const Graph& g, const std::set<const Value*>& constants, Precision p) {
  std::map<const Value*, const Value*> root;  // view output -> storage owner
  auto owner = [&](const Value* v) {
    auto it = root.find(v);
    return it == root.end() ? v : it->second;
  };
  struct Range {
    size_t start = 0, end = 0;
    double bytes = 0;
  };
  std::map<const Value*, Range> live;
  size_t n_nodes = g.nodes().size();
  for (const Value* v : g.inputs) live[v] = {0, 0, pg::value_bytes(*v, p)};
  std::vector<pg::NodeRef> nodes = pg::all_nodes(g);
  for (const auto& ref : nodes) {
    const Node& n = *ref.node;
    if (ref.node->owner == &g && !(n.outputs.empty() || (n.outputs[0] && constants.count(n.outputs[0])))) {
      bool view = pg::is_view(n) && n.input(0) && !constants.count(n.input(0));
      for (const Value* o : n.outputs) {
        if (!o) continue;
        if (view) root[o] = owner(n.input(0));
        else live[o] = {ref.top_index, ref.top_index, pg::value_bytes(*o, p)};
      }
    }
    for (const Value* v : n.inputs) {
      if (!v) continue;
      auto it = live.find(owner(v));
      if (it != live.end()) it->second.end = std::max(it->second.end, ref.top_index);
    }
  }
  for (const Value* v : g.outputs)
    if (v) {
      auto it = live.find(owner(v));
      if (it != live.end()) it->second.end = n_nodes;
    }
  std::vector<double> delta(n_nodes + 2, 0.0);
  for (const auto& [v, r] : live) {
    delta[r.start] += r.bytes;
    delta[r.end + 1] -= r.bytes;
  }
  double cur = 0, peak = 0;
  for (double d : delta) {
    cur += d;
    peak = std::max(peak, cur);
  }
  return peak;
}

}  // namespace

PerfRow estimate(const Model& m, int64_t batch, const Chip& chip, const PerfOptions& opt, bool keep_ops) {
  const Graph& g = *m.graph;
  PerfRow row;
  row.batch = batch;
  double matrix_peak = chip.peak_flops(opt.precision);
  double vector_peak = chip.vector_tflops > 0 ? chip.vector_tflops * 1e12 : matrix_peak;
  std::set<const Value*> constants = pg::constant_values(g);
  // On a measured CPU in fp32, kernels run at kiln's measured kernel rates (perf_cpu.h).
  const bool kiln_runtime = has_kernel_rates(chip) && opt.precision == Precision::fp32;
  const double model_weights = kiln_runtime ? weight_bytes(g, opt.precision) : 0;
  // Where each kernel's bytes are, from the runtime's memory plan (perf_residency.h); a graph
  // the runtime cannot plan statically keeps the per-kernel rule.
  std::unordered_map<const Node*, KernelResidency> residency;
  if (kiln_runtime) {
    try {
      residency = plan_residency(runtime_plan(m), cache_capacities(*chip.machine));
    } catch (const Error&) {
      residency.clear();
    }
  }
  double compute_s = 0, memory_s = 0, overhead_s = 0;
  for (const auto& ref : pg::all_nodes(g)) {
    const Node& n = *ref.node;
    if (pg::is_view(n)) continue;
    bool folded = !n.outputs.empty() && std::all_of(n.outputs.begin(), n.outputs.end(), [&](const Value* o) {
      return !o || constants.count(o);
    });
    if (folded) continue;
    std::optional<ops::Cost> cost = ops::node_cost(n);
    if (!cost) {
      ++row.uncosted_nodes;
      continue;
    }
    OpEstimate e;
    e.node = &n;
    e.path = ref.path;
    e.flops = cost->flops;
    e.bytes = scaled_bytes(n, cost->bytes_read + cost->bytes_written, opt.precision);
    e.matrix = pg::is_matrix(n);
    auto where = residency.find(&n);
    e.time = kiln_runtime ? cpu_kernel_time(n, e.flops, e.bytes, model_weights, chip,
                                            where == residency.end() ? nullptr : &where->second)
                          : op_time(e.flops, e.bytes, e.matrix ? matrix_peak : vector_peak, chip);
    row.flops += e.flops;
    row.bytes += e.bytes;
    ++row.kernels;
    if (e.time.compute_s >= e.time.memory_s) compute_s += e.time.compute_s;
    else memory_s += e.time.memory_s;
    memory_s += e.time.stall_s;  // exposed memory time (perf_cpu.h), whichever term dominates
    overhead_s += e.time.launch_s;
    if (keep_ops) row.ops.push_back(std::move(e));
  }
  row.compute_ms = compute_s * 1e3;
  row.memory_ms = memory_s * 1e3;
  row.overhead_ms = overhead_s * 1e3;
  row.latency_ms = row.compute_ms + row.memory_ms + row.overhead_ms;
  row.throughput_per_s = row.latency_ms > 0 ? static_cast<double>(batch) / (row.latency_ms * 1e-3) : 0;
  row.bound = overhead_s > compute_s && overhead_s > memory_s ? Bound::overhead
              : compute_s >= memory_s                         ? Bound::compute
                                                              : Bound::memory;
  row.weight_bytes = static_cast<int64_t>(weight_bytes(g, opt.precision));
  row.arena_bytes = static_cast<int64_t>(arena_bytes(g, constants, opt.precision));
  row.workspace_bytes = chip.workspace_bytes;
  row.memory_bytes = row.weight_bytes + row.arena_bytes + row.workspace_bytes;
  row.fits = chip.memory_bytes <= 0 || row.memory_bytes <= chip.memory_bytes;
  return row;
}

PerfReport predict(Model& m, const std::vector<int64_t>& batches, const Chip& chip, const PerfOptions& opt,
                   std::optional<double> max_latency_ms) {
  KILN_CHECK(!batches.empty(), "perf: no batch sizes given");
  KILN_CHECK(!max_latency_ms || *max_latency_ms > 0, "--max-latency must be positive");
  chip.peak_flops(opt.precision);  // fails early, naming what the chip has
  PerfReport r;
  r.model = m.graph->name.empty() ? m.source_path : m.graph->name;
  r.chip = chip;
  r.precision = opt.precision;
  r.max_latency_ms = max_latency_ms;
  BatchBinder binder(m, opt.batch_dim);
  for (int64_t b : batches) {
    binder.bind(b);
    r.rows.push_back(estimate(m, b, chip, opt));
  }
  std::vector<const PerfRow*> sorted;
  for (const auto& row : r.rows) sorted.push_back(&row);
  std::sort(sorted.begin(), sorted.end(), [](const PerfRow* a, const PerfRow* b) { return a->batch < b->batch; });
  for (const PerfRow* row : sorted)
    if (row->bound == Bound::compute && row->fits) {
      r.optimal_batch = row->batch;
      r.optimal_reason = "the smallest batch that is compute-bound and fits in memory";
      break;
    }
  if (!r.optimal_batch) {
    const PerfRow* largest = nullptr;
    for (const PerfRow* row : sorted)
      if (row->fits) largest = row;
    if (largest) {
      r.optimal_batch = largest->batch;
      r.optimal_reason = "no batch given is compute-bound: the largest that fits in memory";
    } else {
      r.optimal_reason = "no batch given fits in memory";
    }
  }
  if (max_latency_ms) {
    const PerfRow* best = nullptr;
    for (const PerfRow* row : sorted)
      if (row->fits && row->latency_ms <= *max_latency_ms && (!best || row->throughput_per_s > best->throughput_per_s))
        best = row;
    if (best) r.best_batch_under_latency = best->batch;
  }
  return r;
}

}  // namespace kiln::analysis
