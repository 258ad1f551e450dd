// The quantization report: both models compiled and run on the same held-out inputs in one
// process (outputs, accuracy, interleaved latency), the QDQ model and the float model
// interpreted side by side for per-layer errors, and `kiln run` of each artifact in a child
// process for its peak resident memory.
#include "kiln/compress/report.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>
#include <thread>
#include <tuple>

#include "kiln/compiler/compile.h"
#include "kiln/frontend/onnx.h"
#include "kiln/ir/npy.h"
#include "kiln/kernels/int8.h"
#include "kiln/runtime/artifact.h"
#include "kiln/runtime/executable.h"

extern char** environ;

namespace kiln::compress {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

}  // namespace

double file_bytes(const std::string& path) {
  std::error_code ec;
  double b = static_cast<double>(fs::file_size(path, ec));
  if (ec) return 0;
  // ONNX external data lives next to the model.
  for (const char* ext : {".data", "_data"}) {
    auto extra = fs::file_size(path + ext, ec);
    if (!ec) b += static_cast<double>(extra);
  }
  return b;
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Peak resident memory of `kiln run ARTIFACT --input ...` in a child process (bytes; 0 on
// failure). The child's VmHWM (its address space's high-water mark, fresh after exec) is polled
// until it exits: rusage's ru_maxrss would carry the parent's size over the exec.
double peak_rss_of_run(const std::string& exe, const std::string& artifact, const std::vector<std::string>& inputs) {
  std::vector<std::string> args = {exe, "run", artifact, "--quiet"};
  for (const auto& in : inputs) args.push_back("--input"), args.push_back(in);
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, exe.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return 0;
  const std::string status_path = "/proc/" + std::to_string(pid) + "/status";
  double peak = 0;
  int status = 0;
  for (;;) {
    std::ifstream st(status_path);
    for (std::string line; std::getline(st, line);)
      if (line.rfind("VmHWM:", 0) == 0) peak = std::max(peak, std::atof(line.c_str() + 6) * 1024.0);  // kB
    pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0) return 0;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? peak : 0;
}

// Index of the largest of n values.
int64_t argmax(const float* p, int64_t n) { return std::max_element(p, p + n) - p; }

std::string mib(double b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f MiB", b / (1024.0 * 1024.0));
  return buf;
}

std::vector<std::string> suggestions(const Report& r) {
  std::vector<std::string> s;
  if (r.random_calibration)
    s.push_back("calibrate on real inputs (--calib DIR): random calibration data only sets plausible ranges");
  std::vector<LayerReport> worst = r.layers;
  std::sort(worst.begin(), worst.end(), [](const auto& a, const auto& b) { return a.error.sqnr_db < b.error.sqnr_db; });
  if (r.budget) {
    s.push_back("the accuracy budget chose the float layers (" + std::to_string(r.budget->float_nodes.size()) +
                "): a larger --accuracy-budget quantizes more of them, a smaller one fewer");
  } else if (!worst.empty() && worst.front().error.sqnr_db < 20) {
    std::string names;
    for (size_t i = 0; i < std::min<size_t>(3, worst.size()) && worst[i].error.sqnr_db < 20; ++i)
      names += (names.empty() ? "" : ",") + worst[i].node;
    s.push_back("keep the least accurate layers in float: --exclude " + names);
    // Errors accumulate through the network, so the late layers look worst; on networks that
    // amplify perturbations the early layers are usually where float helps most.
    std::string first;
    for (size_t i = 0; i < std::min<size_t>(3, r.layers.size()); ++i) first += (first.empty() ? "" : ",") + r.layers[i].node;
    s.push_back("or, since the error grows layer by layer, the first ones: --exclude " + first);
    if (r.calibration == "minmax")
      s.push_back("clip outliers: --method percentile:99.99 or --method entropy (minmax spends the range on rare values)");
  }
  if (r.accuracy_fp32 && r.accuracy_int8 && *r.accuracy_fp32 - *r.accuracy_int8 > 0.5)
    s.push_back("accuracy drops by more than 0.5 points: exclude the worst layers, or try --activations s8");
  if (!r.float_nodes.empty() && !r.budget)
    s.push_back(std::to_string(r.float_nodes.size()) + " compute node(s) stay in float (see the list): they run the fp32 kernels");
  if (r.ms_int8 > 0 && r.ms_fp32 / r.ms_int8 < 1.5 && (r.mode == "static" || r.mode == "dynamic")) {
    // Blamed only when they are many: one pooling before the classifier costs little.
    const int conv = r.islands.conversions;
    if (conv * 10 > r.quantized_nodes)
      s.push_back("little speed-up: the int8 model converts to float " + std::to_string(conv) +
                  " times for ops that stay in f32 (" + r.islands.str() + ")");
    else
      s.push_back(std::string("little speed-up, though ") +
                  (conv == 0 ? "every op runs on int8"
                             : "only " + std::to_string(conv) + " conversion(s) to float remain (" + r.islands.str() + ")") +
                  ": " + (r.host_has_vnni ? "" : "without VNNI int8 multiplies at about twice fp32's rate, and ") +
                  "memory-bound layers (depthwise, 1x1 with few channels) gain less than compute-bound ones");
  }
  if (r.mode == "static" && !r.reduce_range && !r.host_has_vnni)
    s.push_back("this CPU has no VNNI: with --reduce-range (7-bit weights) kiln's int8 kernels multiply bytes "
                "directly (resnet50: 1.5x faster on such a CPU), and ONNX Runtime runs the QDQ model without its "
                "int16 saturation; it costs one bit of weight precision");
  if (s.empty()) s.push_back("nothing obvious: the quantized model tracks the float one closely");
  return s;
}

}  // namespace

std::string FloatIslands::str() const {
  std::string out;
  for (const auto& [op, n] : readers) out += (out.empty() ? "" : ", ") + op + " x" + std::to_string(n);
  return out;
}

FloatIslands float_islands(const Model& compiled) {
  FloatIslands fi;
  std::map<std::string, int> count;
  std::map<const Value*, std::vector<const Node*>> readers;
  for (const auto& n : compiled.graph->nodes())
    for (const Value* v : n->inputs)
      if (v) readers[v].push_back(n.get());
  for (const auto& n : compiled.graph->nodes()) {
    const bool to_float = (n->domain.empty() && n->op == "DequantizeLinear" && !(n->input(0) && n->input(0)->is_constant())) ||
                          (n->op == "QLookup" && n->outputs[0] && n->outputs[0]->dtype == DType::f32);
    if (!to_float || !n->outputs[0]) continue;
    auto it = readers.find(n->outputs[0]);
    if (it == readers.end()) continue;  // read only as a graph output
    ++fi.conversions;
    for (const Node* r : it->second) ++count[r->op];
  }
  for (const auto& [op, c] : count) fi.readers.emplace_back(op, c);
  std::stable_sort(fi.readers.begin(), fi.readers.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return fi;
}

void AgreementSum::add(const float* r, const float* q, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    double a = r[i], b = q[i], e = a - b;
    rr += a * a, qq += b * b, rq += a * b, ee += e * e;
    max_abs = std::max(max_abs, std::abs(e));
  }
}

double worst_row_cosine(const float* r, const float* q, int64_t n, int64_t row) {
  double worst = 1;
  for (int64_t at = 0; row > 0 && at + row <= n; at += row) {
    AgreementSum one;
    one.add(r + at, q + at, row);
    worst = std::min(worst, one.result().cosine);
  }
  return worst;
}

Agreement AgreementSum::result() const {
  Agreement a;
  a.cosine = rr > 0 && qq > 0 ? rq / std::sqrt(rr * qq) : (rr == qq ? 1.0 : 0.0);
  a.sqnr_db = ee > 0 ? 10 * std::log10(rr / ee) : std::numeric_limits<double>::infinity();
  a.max_abs = max_abs;
  return a;
}

std::pair<double, double> interleaved_latency(Executable& a, Executable& b, const Inputs& in, int runs) {
  std::vector<Tensor> xs;
  for (const Value* v : a.model().graph->inputs) xs.push_back(in.count(v->name) ? in.at(v->name) : Tensor());
  std::vector<Tensor> oa, ob;
  a.run(xs, oa);
  b.run(xs, ob);
  std::vector<double> ta, tb;
  for (int i = 0; i < runs; ++i) {
    auto t0 = Clock::now();
    a.run(xs, oa);
    auto t1 = Clock::now();
    b.run(xs, ob);
    auto t2 = Clock::now();
    ta.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    tb.push_back(std::chrono::duration<double, std::milli>(t2 - t1).count());
  }
  return {median(ta), median(tb)};
}

Report make_report(const ReportJob& rj) {
  const QuantizeJob& job = *rj.job;
  const QuantizeResult& res = *rj.result;
  Report r;
  r.model = job.model_path;
  r.out = job.out_path;
  r.format = job.format == OutputFormat::Qdq ? "qdq" : "kiln";
  r.mode = job.precision != "int8" ? job.precision : job.dynamic ? "dynamic" : "static";
  r.reduce_range = job.options.reduce_range;
  r.host_has_vnni = kernels::int8::qkernels().isa != kernels::int8::QIsa::Avx2;
  r.calibration = job.precision != "int8" ? "none (" + job.precision + " weights)"
                  : job.dynamic           ? "none (dynamic)"
                                          : calibration_name(job.options.calibration);
  r.random_calibration = res.random_calibration;
  r.quantized_nodes = res.quantized_nodes;
  r.float_nodes = res.plan.skipped;
  r.budget = res.budget;
  r.runs = rj.runs;

  fs::path work = fs::path(job.out_path).parent_path() / (fs::path(job.out_path).filename().string() + ".report");
  fs::create_directories(work);
  // Both models compiled the same way (-O2, same dims).
  compiler::CompileOptions copt;
  copt.opt_level = 2;
  copt.inputs = job.inputs;
  copt.cache_dir = job.cache_dir;
  const std::string fp32_artifact = (work / "fp32.kiln").string();
  compiler::compile_file(job.model_path, fp32_artifact, copt);
  std::string int8_artifact = job.out_path;
  if (job.format == OutputFormat::Qdq) {
    int8_artifact = (work / "int8.kiln").string();
    compiler::compile_file(job.out_path, int8_artifact, copt);
  }
  std::unique_ptr<Executable> fp32 = Executable::load(fp32_artifact);
  std::unique_ptr<Executable> int8 = Executable::load(int8_artifact);
  r.islands = float_islands(read_artifact(int8_artifact).model);

  // Held-out inputs.
  Model source = import_onnx(job.model_path);
  BatchSource eval = rj.eval_dir.empty()
                         ? BatchSource::random(source, rj.eval_random, job.seed + 1000003, job.inputs.dims)
                         : BatchSource::from_dir(source, rj.eval_dir);
  r.eval_source = rj.eval_dir.empty() ? eval.describe() + " (not the calibration seed)" : eval.describe();
  std::optional<Tensor> labels;
  if (!rj.eval_dir.empty() && fs::exists(fs::path(rj.eval_dir) / "labels.npy"))
    labels = read_npy((fs::path(rj.eval_dir) / "labels.npy").string());

  const auto& outs = source.graph->outputs;
  std::vector<AgreementSum> sums(outs.size());
  std::vector<double> worst(outs.size(), 1.0);
  int64_t correct_fp32 = 0, correct_int8 = 0, seen = 0;
  for (size_t b = 0; b < eval.size(); ++b) {
    Inputs in = eval.batch(b);
    auto yf = fp32->run(in);
    auto yq = int8->run(in);
    for (size_t o = 0; o < outs.size(); ++o) {
      const Tensor& tf = yf.at(outs[o]->name);
      const Tensor& tq = yq.at(outs[o]->name);
      KILN_CHECK(tf.dtype() == DType::f32 && tq.dtype() == DType::f32 && tf.numel() == tq.numel(), "report: output ",
                 outs[o]->name, " differs in type or size between the float and the quantized model");
      sums[o].add(tf.data<float>(), tq.data<float>(), tf.numel());
      const int64_t samples = tf.rank() >= 2 ? tf.dim(0) : 1;
      if (samples > 0)
        worst[o] = std::min(worst[o], worst_row_cosine(tf.data<float>(), tq.data<float>(), tf.numel(), tf.numel() / samples));
    }
    const Tensor& logits_f = yf.at(outs[0]->name);
    const Tensor& logits_q = yq.at(outs[0]->name);
    const int64_t classes = logits_f.rank() ? logits_f.dim(logits_f.rank() - 1) : 1;
    const int64_t rows = classes ? logits_f.numel() / classes : 0;
    if (labels) {
      for (int64_t i = 0; i < rows; ++i) {
        KILN_CHECK(seen + i < labels->numel(), "--eval: labels.npy has ", labels->numel(), " labels, fewer than the samples");
        int64_t want = labels->as_int64(seen + i);
        correct_fp32 += argmax(logits_f.data<float>() + i * classes, classes) == want;
        correct_int8 += argmax(logits_q.data<float>() + i * classes, classes) == want;
      }
    }
    seen += rows;
  }
  r.eval_samples = seen;
  for (size_t o = 0; o < outs.size(); ++o) r.outputs.push_back({outs[o]->name, sums[o].result(), worst[o]});
  if (labels && seen > 0) {
    r.accuracy_fp32 = 100.0 * correct_fp32 / seen;
    r.accuracy_int8 = 100.0 * correct_int8 / seen;
  }

  // Per-layer error: the QDQ model and the float model, interpreted, on the first held-out batch.
  if (res.qdq && !res.plan.nodes.empty()) {
    Model fp = import_onnx(job.model_path);
    prepare_float_model(fp);
    std::vector<std::string> taps;
    std::map<std::string, std::string> op_of;
    for (const auto& up : fp.graph->nodes())
      if (std::find(res.plan.nodes.begin(), res.plan.nodes.end(), up->name) != res.plan.nodes.end()) {
        taps.push_back(up->outputs[0]->name);
        op_of[up->outputs[0]->name] = up->op + "\t" + up->name;
      }
    Inputs in = eval.batch(0);
    auto tf = run_with_taps(fp, in, taps);
    auto tq = run_with_taps(*res.qdq, in, taps);
    for (const auto& t : taps) {
      AgreementSum s;
      s.add(tf.at(t).data<float>(), tq.at(t).data<float>(), tf.at(t).numel());
      const std::string& on = op_of[t];
      r.layers.push_back({on.substr(on.find('\t') + 1), on.substr(0, on.find('\t')), s.result()});
    }
  }

  // Latency: the two models alternate run by run on the first batch (same load, same caches).
  std::tie(r.ms_fp32, r.ms_int8) = interleaved_latency(*fp32, *int8, eval.batch(0), rj.runs);
  r.threads = fp32->manifest().threads;
  r.bytes_fp32 = file_bytes(job.model_path);
  r.bytes_int8 = file_bytes(job.out_path);
  r.bytes_fp32_artifact = file_bytes(fp32_artifact);
  if (!rj.kiln_exe.empty()) {
    std::vector<std::string> args;
    Inputs in = eval.batch(0);
    for (const auto& [name, t] : in) {
      std::string f = (work / (name + ".npy")).string();
      write_npy(f, t);
      args.push_back(name + "=" + f);
    }
    fp32.reset();
    int8.reset();
    r.peak_rss_fp32 = peak_rss_of_run(rj.kiln_exe, fp32_artifact, args);
    r.peak_rss_int8 = peak_rss_of_run(rj.kiln_exe, int8_artifact, args);
  }
  r.next = suggestions(r);
  return r;
}

std::string format_report(const Report& r) {
  std::ostringstream s;
  const char* label = r.mode == "bf16" || r.mode == "fp16" ? r.mode.c_str() : "int8";
  char buf[256];
  s << "quantization report: " << r.model << " -> " << r.out << " (" << r.mode << ", format " << r.format
    << ", calibration " << r.calibration << (r.random_calibration ? " on RANDOM data" : "")
    << (r.reduce_range ? ", 7-bit weights" : "") << ")\n";
  s << "  quantized nodes: " << r.quantized_nodes << ", kept in float: " << r.float_nodes.size() << "\n";
  for (const auto& f : r.float_nodes) s << "    " << f << "\n";
  s << "  held-out inputs: " << r.eval_source << ", " << r.eval_samples << " samples\n";
  s << "  output            cosine      SQNR dB    max |diff|   worst sample cosine\n";
  for (const auto& o : r.outputs) {
    std::snprintf(buf, sizeof buf, "  %-16s  %.6f  %9.2f  %12.4g   %.6f\n", o.name.c_str(), o.error.cosine, o.error.sqnr_db,
                  o.error.max_abs, o.worst_sample_cosine);
    s << buf;
  }
  if (r.accuracy_fp32) {
    std::snprintf(buf, sizeof buf, "  accuracy: fp32 %.2f%%  %s %.2f%%  (%+.2f points)\n", *r.accuracy_fp32, label,
                  *r.accuracy_int8, *r.accuracy_int8 - *r.accuracy_fp32);
    s << buf;
  }
  std::snprintf(buf, sizeof buf, "  latency (median of %d, interleaved): fp32 %.3f ms  %s %.3f ms  (%.2fx)\n", r.runs,
                r.ms_fp32, label, r.ms_int8, r.ms_int8 > 0 ? r.ms_fp32 / r.ms_int8 : 0.0);
  s << buf;
  s << "  size: fp32 model " << mib(r.bytes_fp32) << " (kiln fp32 artifact " << mib(r.bytes_fp32_artifact)
    << "), " << label << " " << mib(r.bytes_int8);
  std::snprintf(buf, sizeof buf, " (%.3fx of the model)\n", r.bytes_fp32 > 0 ? r.bytes_int8 / r.bytes_fp32 : 0.0);
  s << buf;
  if (r.islands.conversions > 0)
    s << "  int8 -> float inside the model: " << r.islands.conversions << " conversion(s), read by " << r.islands.str()
      << "\n";
  if (r.peak_rss_fp32 > 0 && r.peak_rss_int8 > 0)
    s << "  peak memory (kiln run, resident): fp32 " << mib(r.peak_rss_fp32) << ", " << label << " "
      << mib(r.peak_rss_int8) << "\n";
  if (!r.layers.empty()) {
    s << "  per layer (output vs float, first held-out batch):\n    node                                   op       cosine     SQNR dB\n";
    for (const auto& l : r.layers) {
      std::snprintf(buf, sizeof buf, "    %-38s %-7s  %.6f  %9.2f\n", l.node.c_str(), l.op.c_str(), l.error.cosine,
                    l.error.sqnr_db);
      s << buf;
    }
  }
  s << "  next:\n";
  for (const auto& n : r.next) s << "    - " << n << "\n";
  return s.str();
}

std::string json_str(const std::string& v) {
  std::string o = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') o += '\\', o += c;
    else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else o += c;
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return v > 0 ? "1e999" : "null";
  char b[32];
  std::snprintf(b, sizeof b, "%.9g", v);
  return b;
}

namespace {
std::string json_agreement(const Agreement& a) {
  return "{\"cosine\": " + json_num(a.cosine) + ", \"sqnr_db\": " + json_num(a.sqnr_db) +
         ", \"max_abs\": " + json_num(a.max_abs) + "}";
}
}  // namespace

std::string report_json(const Report& r) {
  std::ostringstream s;
  s << "{\n  \"model\": " << json_str(r.model) << ",\n  \"out\": " << json_str(r.out) << ",\n  \"mode\": "
    << json_str(r.mode) << ",\n  \"format\": " << json_str(r.format) << ",\n  \"calibration\": "
    << json_str(r.calibration) << ",\n  \"random_calibration\": " << (r.random_calibration ? "true" : "false")
    << ",\n  \"reduce_range\": " << (r.reduce_range ? "true" : "false") << ",\n  \"quantized_nodes\": " << r.quantized_nodes << ",\n  \"float_nodes\": [";
  for (size_t i = 0; i < r.float_nodes.size(); ++i) s << (i ? ", " : "") << json_str(r.float_nodes[i]);
  s << "],\n  \"eval\": {\"source\": " << json_str(r.eval_source) << ", \"samples\": " << r.eval_samples << "},\n";
  s << "  \"outputs\": [";
  for (size_t i = 0; i < r.outputs.size(); ++i)
    s << (i ? ", " : "") << "{\"name\": " << json_str(r.outputs[i].name) << ", \"error\": " << json_agreement(r.outputs[i].error)
      << ", \"worst_sample_cosine\": " << json_num(r.outputs[i].worst_sample_cosine) << "}";
  s << "],\n  \"accuracy\": ";
  if (r.accuracy_fp32) s << "{\"fp32\": " << json_num(*r.accuracy_fp32) << ", \"int8\": " << json_num(*r.accuracy_int8) << "}";
  else s << "null";
  s << ",\n  \"latency_ms\": {\"fp32\": " << json_num(r.ms_fp32) << ", \"int8\": " << json_num(r.ms_int8)
    << ", \"runs\": " << r.runs << "},\n  \"bytes\": {\"fp32_model\": " << json_num(r.bytes_fp32)
    << ", \"fp32_artifact\": " << json_num(r.bytes_fp32_artifact) << ", \"int8\": " << json_num(r.bytes_int8)
    << "},\n  \"peak_rss_bytes\": {\"fp32\": " << json_num(r.peak_rss_fp32) << ", \"int8\": " << json_num(r.peak_rss_int8)
    << "},\n  \"float_islands\": {\"conversions\": " << r.islands.conversions << ", \"readers\": {";
  for (size_t i = 0; i < r.islands.readers.size(); ++i)
    s << (i ? ", " : "") << json_str(r.islands.readers[i].first) << ": " << r.islands.readers[i].second;
  s << "}},\n  \"layers\": [";
  for (size_t i = 0; i < r.layers.size(); ++i)
    s << (i ? ",\n    " : "\n    ") << "{\"node\": " << json_str(r.layers[i].node) << ", \"op\": " << json_str(r.layers[i].op)
      << ", \"error\": " << json_agreement(r.layers[i].error) << "}";
  if (r.budget) s << "],\n  \"accuracy_budget\": " << budget_plan_json(*r.budget) << ",\n  \"next\": [";
  else s << "],\n  \"next\": [";
  for (size_t i = 0; i < r.next.size(); ++i) s << (i ? ", " : "") << json_str(r.next[i]);
  s << "]\n}\n";
  return s.str();
}

void write_report_json(const Report& r, const std::string& path) {
  std::ofstream f(path);
  f << report_json(r);
  KILN_CHECK(f.good(), path, ": cannot write the JSON report");
}

}  // namespace kiln::compress
