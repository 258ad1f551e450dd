// `kiln profile --vs ort`: ONNX Runtime's per-node profile (profile_ort.h).
#include "profile_ort.h"

#include "bench_backends.h"
#include "common.h"
#include "kiln/plan/json.h"

namespace kiln::cli {

OrtProfiler::OrtProfiler(const std::string& script, const std::string& model, const TensorMap& inputs, int threads,
                         const std::string& work_dir) {
  check_ort_runnable(script);
  OrtBackendSpec spec;
  spec.script = script, spec.model_path = model, spec.threads = threads, spec.work_dir = work_dir;
  process_ = start_ort_script(spec, inputs, {"--profile", work_dir + "/trace"});
}

OrtProfiler::~OrtProfiler() {
  try {
    process_->send("quit");
  } catch (const Error&) {
    // Already gone: LineProcess's destructor reaps it.
  }
}

std::string OrtProfiler::reply() { return ort_reply(*process_); }

void OrtProfiler::run(int n) {
  if (n <= 0) return;
  process_->send("run " + std::to_string(n));
  reply();
  process_->wait_until_idle(2.0);
}

void OrtProfiler::finish(int runs, std::vector<analysis::PeerNode>& nodes, double& run_ms) {
  process_->send("profile " + std::to_string(runs));
  const json::Value j = json::parse(reply(), "ort_bench.js profile reply");
  for (const json::Value& e : j.at("profile_nodes", "ort profile").as_array("ort profile: profile_nodes")) {
    analysis::PeerNode n;
    n.name = e.at("name", "ort profile node").as_string("ort profile node: name");
    n.op = e.at("op", "ort profile node").as_string("ort profile node: op");
    n.ms = e.at("ms", "ort profile node").as_double("ort profile node: ms");
    nodes.push_back(std::move(n));
  }
  run_ms = j.at("run_ms", "ort profile").as_double("ort profile: run_ms");
}

}  // namespace kiln::cli
