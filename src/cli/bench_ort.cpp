// The ONNX Runtime backend: a node child process running scripts/ort_bench.js, which keeps one
// ORT session and answers "outputs" / "run K" / "quit" on stdin with one JSON line each. The
// child blocks on stdin between commands, so it never competes with kiln for the cores while
// kiln measures; it times its own runs, so pipe latency is not part of ORT's numbers.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "bench_backends.h"
#include "bench_process.h"
#include "common.h"
#include "kiln/ir/npy.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kBootstrapHint = "run scripts/bootstrap.sh";

bool on_path(const std::string& program) {
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':'))
    if (!dir.empty() && access((dir + "/" + program).c_str(), X_OK) == 0) return true;
  return false;
}

// The numbers of the array after "key":[ in a one-line JSON reply.
std::vector<double> json_number_array(const std::string& line, const std::string& key) {
  std::string head = "\"" + key + "\":[";
  auto at = line.find(head);
  KILN_CHECK(at != std::string::npos, "--vs ort: unexpected reply from ort_bench.js: ", line.substr(0, 200));
  std::vector<double> values;
  const char* p = line.c_str() + at + head.size();
  while (*p && *p != ']') {
    char* end = nullptr;
    values.push_back(std::strtod(p, &end));
    KILN_CHECK(end != p, "--vs ort: bad number in reply: ", line.substr(0, 200));
    p = end;
    if (*p == ',') ++p;
  }
  return values;
}

class OrtBackend : public BenchBackend {
 public:
  OrtBackend(OrtBackendSpec spec, std::vector<std::string> output_names)
      : spec_(std::move(spec)), output_names_(std::move(output_names)) {}
  std::string name() const override { return "ort"; }

  void prepare(const TensorMap& inputs) override {
    OrtBackendSpec spec = spec_;
    spec.work_dir += "/ort";
    out_dir_ = spec.work_dir + "/outputs";
    process_ = start_ort_script(spec, inputs);
  }

  TensorMap run_once() override {
    process_->send("outputs");
    reply();
    TensorMap out;
    for (const auto& name : output_names_) out[name] = read_npy(out_dir_ + "/" + sanitize_name(name) + ".npy");
    return out;
  }

  std::vector<double> time_runs(int n, int gap_ms) override {
    process_->send("run " + std::to_string(n) + (gap_ms > 0 ? " " + std::to_string(gap_ms) : ""));
    std::vector<double> ms = json_number_array(reply(), "times_ms");
    KILN_CHECK(static_cast<int>(ms.size()) == n, "--vs ort: asked for ", n, " timed runs, got ", ms.size());
    return ms;
  }

  // ORT's intra-op workers spin after a run (about 40 ms of one core after a resnet50 run at 2
  // threads here): kiln's next block must not start while they do.
  double wait_until_idle() override { return process_ ? process_->wait_until_idle(2.0) : 0; }

  ~OrtBackend() override {
    if (process_) {
      try {
        process_->send("quit");
      } catch (const Error&) {
        // Already gone: the destructor of process_ reaps it.
      }
    }
  }

 private:
  std::string reply() { return ort_reply(*process_); }

  OrtBackendSpec spec_;
  std::vector<std::string> output_names_;
  std::string out_dir_;
  std::unique_ptr<LineProcess> process_;
};

}  // namespace

std::string ort_reply(LineProcess& process) {
  auto line = process.receive();
  if (line) return *line;
  std::string why = process.last_stderr_line();
  throw Error(str_cat("--vs ort: ONNX Runtime failed: ", why.empty() ? "node exited without a message" : why));
}

std::unique_ptr<LineProcess> start_ort_script(const OrtBackendSpec& spec, const TensorMap& inputs,
                                              const std::vector<std::string>& extra) {
  make_dirs(spec.work_dir + "/inputs");
  std::vector<std::string> argv = {"node", spec.script, spec.model_path, "--threads", std::to_string(spec.threads),
                                   "--out", spec.work_dir + "/outputs"};
  for (const auto& [name, t] : inputs) {
    std::string file = spec.work_dir + "/inputs/" + sanitize_name(name) + ".npy";
    write_npy(file, t);
    argv.push_back("--input");
    argv.push_back(name + "=" + file);
  }
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto process = std::make_unique<LineProcess>(argv, spec.work_dir + "/stderr.txt");
  const std::string ready = ort_reply(*process);
  KILN_CHECK(ready.rfind("{\"ready\":true", 0) == 0, "--vs ort: unexpected first line from ort_bench.js: ",
             ready.substr(0, 200));
  return process;
}

void check_ort_runnable(const std::string& script) {
  KILN_CHECK(fs::is_regular_file(script), "--vs ort: ", script,
             " not found (ONNX Runtime is run by scripts/ort_bench.js with onnxruntime-node: ", kBootstrapHint, ")");
  KILN_CHECK(on_path("node"), "--vs ort: node is not on PATH (", kBootstrapHint, ")");
}

std::unique_ptr<BenchBackend> make_ort_backend(const OrtBackendSpec& spec, const std::vector<std::string>& outputs) {
  check_ort_runnable(spec.script);
  return std::make_unique<OrtBackend>(spec, outputs);
}

std::string find_ort_script() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  std::vector<fs::path> candidates;
  if (!ec) {
    fs::path bin = exe.parent_path();
    // BUILD/bin/kiln with BUILD inside the source tree, beside it, or an installed prefix.
    candidates = {bin / "../../scripts/ort_bench.js", bin / "../scripts/ort_bench.js",
                  bin / "../share/kiln/scripts/ort_bench.js"};
  }
  std::string looked;
  for (const auto& c : candidates) {
    if (fs::is_regular_file(c)) return fs::weakly_canonical(c).string();
    looked += (looked.empty() ? "" : ", ") + c.lexically_normal().string();
  }
  throw Error(str_cat("--vs ort: cannot find scripts/ort_bench.js (looked at ", looked.empty() ? "nothing" : looked,
                      "); give --ort-script FILE"));
}

}  // namespace kiln::cli
