// What quantization gained and cost, measured in one run: output agreement with the float model
// on held-out inputs (cosine, SQNR), accuracy on labels, per-layer error (which layers to blame),
// latency of both compiled models (interleaved), file size and peak memory, and what to try next.
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compress/driver.h"
#include "kiln/runtime/executable.h"

namespace kiln::compress {

// Agreement of a quantized tensor q with its float reference r over all evaluated samples.
struct Agreement {
  double cosine = 0;    // <r, q> / (|r| |q|)
  double sqnr_db = 0;   // 10 log10(|r|^2 / |r - q|^2)
  double max_abs = 0;   // max |r - q|
};
// Accumulates the sums behind an Agreement over several tensors.
struct AgreementSum {
  double rr = 0, qq = 0, rq = 0, ee = 0, max_abs = 0;
  void add(const float* r, const float* q, int64_t n);
  Agreement result() const;
};

struct LayerReport {
  std::string node, op;
  Agreement error;  // the node's output in the QDQ model vs the float model
};

struct OutputReport {
  std::string name;
  Agreement error;                   // over every evaluated sample at once
  double worst_sample_cosine = 1;    // the lowest cosine of one sample (a row along dim 0): a flat
                                     // cosine over hundreds of samples can hide one that went wrong
};
// The cosine of r and q row by row (rows of `row` elements), the lowest of them.
double worst_row_cosine(const float* r, const float* q, int64_t n, int64_t row);

// Where a compiled int8 model leaves int8 for float ops and comes back (float_islands): the
// conversions to float (DequantizeLinear, or a kiln.QLookup with a float table) whose result is
// read by something other than the graph's outputs, and the ops that read them, counted by type.
struct FloatIslands {
  int conversions = 0;
  std::vector<std::pair<std::string, int>> readers;  // op type, count; most frequent first
  std::string str() const;                           // "GlobalAveragePool x16, Mul x16"
};
FloatIslands float_islands(const Model& compiled);

struct Report {
  std::string model, out, format, mode, calibration, eval_source;
  bool random_calibration = false;
  bool reduce_range = false;             // 7-bit weights (--reduce-range)
  bool host_has_vnni = true;             // this CPU's int8 kernels multiply bytes with VNNI
  int quantized_nodes = 0;
  std::vector<std::string> float_nodes;  // compute nodes kept in float, with why
  std::vector<OutputReport> outputs;
  std::vector<LayerReport> layers;       // static quantization only
  int64_t eval_samples = 0;
  std::optional<double> accuracy_fp32, accuracy_int8;  // with labels
  double ms_fp32 = 0, ms_int8 = 0;       // median latency, compiled, interleaved
  int runs = 0, threads = 0;
  double bytes_fp32 = 0, bytes_int8 = 0;             // source model vs what kiln quantize wrote
  double bytes_fp32_artifact = 0;                     // the float model compiled by kiln
  double peak_rss_fp32 = 0, peak_rss_int8 = 0;        // `kiln run` of each artifact (0 = not measured)
  FloatIslands islands;                               // where the compiled int8 model runs in float
  std::vector<std::string> next;                      // what to try next
  std::optional<BudgetPlan> budget;                   // --accuracy-budget's plan
};

struct ReportJob {
  const QuantizeJob* job = nullptr;
  const QuantizeResult* result = nullptr;
  std::string eval_dir;        // held-out inputs (+ labels.npy); "" = random inputs (other seed)
  int eval_random = 4;         // random held-out batches when eval_dir is empty
  int runs = 20;               // latency runs of each model
  std::string kiln_exe;        // the kiln binary, to measure peak memory of `kiln run` ("" = skip)
};

Report make_report(const ReportJob& rj);
std::string format_report(const Report& r);
std::string report_json(const Report& r);
void write_report_json(const Report& r, const std::string& path);
// Median latencies (ms) of `a` and `b` run alternately `runs` times on the same inputs, after one
// warm-up each (same load, same caches for both).
std::pair<double, double> interleaved_latency(Executable& a, Executable& b, const Inputs& in, int runs);
// Bytes of a model file (plus ONNX external data next to it); 0 when missing.
double file_bytes(const std::string& path);
// JSON pieces shared by the compress reports: a quoted, escaped string; a number (inf as 1e999).
std::string json_str(const std::string& v);
std::string json_num(double v);

}  // namespace kiln::compress
