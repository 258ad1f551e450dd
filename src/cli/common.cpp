#include "common.h"

#include <sched.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "kiln/frontend/load.h"
#include "kiln/kernels/parallel.h"
#include "kiln/ir/text.h"
#include "kiln/ops/op.h"

namespace kiln::cli {

ShapeFlags parse_shape_flags(const Args& a) {
  ShapeFlags f;
  for (const auto& s : a.all("--dim")) {
    auto [name, value] = split_assignment("--dim", s);
    if (auto dots = value.find(".."); dots != std::string::npos) {
      DimRange r{parse_int("--dim " + name, value.substr(0, dots)), parse_int("--dim " + name, value.substr(dots + 2))};
      KILN_CHECK(r.min >= 0 && r.min <= r.max, "--dim ", name, ": bad range '", value, "' (want LO..HI with 0 <= LO <= HI)");
      f.ranges[name] = r;
      if (r.min == r.max) f.spec.dims[name] = r.min;
    } else {
      f.spec.dims[name] = parse_int("--dim " + name, value);
    }
  }
  for (const auto& s : a.all("--shape")) {
    auto [name, value] = split_assignment("--shape", s);
    f.spec.shapes[name] = parse_dims("--shape " + name, value);
  }
  return f;
}

Model load_model(const std::string& path, const ShapeFlags& flags) {
  Model m = load_model_file(path);
  // Range-only dims (--dim N=1..64) must still name a real dim.
  auto symbols = ops::input_dim_symbols(*m.graph);
  for (const auto& [name, r] : flags.ranges)
    KILN_CHECK(std::find(symbols.begin(), symbols.end(), name) != symbols.end(), "--dim ", name,
               ": the model's inputs have no dim named '", name, "'");
  if (!flags.spec.dims.empty() || !flags.spec.shapes.empty()) {
    DimBindings bound = ops::specialize_inputs(m, flags.spec);
    for (const auto& [name, size] : bound) {
      auto r = flags.ranges.find(name);
      KILN_CHECK(r == flags.ranges.end() || (size >= r->second.min && size <= r->second.max), name, "=", size,
                 " is out of the range ", r->second.min, "..", r->second.max, " declared by --dim");
    }
  }
  return m;
}

std::string sanitize_name(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (s.empty() || s == "." || s == "..") s = "_" + s;
  return s;
}

int take_opt_level(const std::string& verb, int argc, char** argv, std::vector<char*>& rest, int dflt) {
  int level = dflt;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.rfind("-O", 0) == 0) {
      KILN_CHECK(arg.size() == 3 && arg[2] >= '0' && arg[2] <= '3', "kiln ", verb, ": unknown level '", arg,
                 "' (use -O0, -O1, -O2 or -O3)");
      level = arg[2] - '0';
    } else {
      rest.push_back(argv[i]);
    }
  }
  return level;
}

void make_dirs(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  KILN_CHECK(!ec, path, ": cannot create directory: ", ec.message());
}

TempDir::TempDir(const std::string& prefix) {
  namespace fs = std::filesystem;
  std::string templ = (fs::temp_directory_path() / (prefix + ".XXXXXX")).string();
  KILN_CHECK(mkdtemp(templ.data()) != nullptr, "cannot create a temporary directory under ",
             fs::temp_directory_path().string());
  path_ = templ;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void write_file(const std::string& path, std::string_view text) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  bool in_place = fs::exists(st) && !fs::is_regular_file(st);
  std::string tmp = in_place ? path : path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(text.data(), static_cast<std::streamsize>(text.size()));
    f.close();
    KILN_CHECK(f.good(), path, ": cannot write");
  }
  KILN_CHECK(in_place || std::rename(tmp.c_str(), path.c_str()) == 0, path, ": cannot write");
}

// A sleeping worker would come too late to answer: it is woken and kept spinning first, and
// attempts go on for up to kTripPatience, since a vCPU that was idle can take a millisecond or
// more to come back (with three attempts, ~0.3 ms, 8 of 20 readings between mobilenet_v2's
// blocks were missing).
double cores_round_trip_ns(int threads) {
  constexpr auto kTripPatience = std::chrono::milliseconds(20);
  const kernels::SpinningScope spinning;
  kernels::parallel_for(threads, threads, [](int64_t, int64_t) {});
  const auto give_up = std::chrono::steady_clock::now() + kTripPatience;
  do {
    if (const double ns = kernels::core_round_trip_ns(); ns > 0) return ns;
  } while (std::chrono::steady_clock::now() < give_up);
  return -1;
}

std::string pin_to_first_cpus(int threads) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (threads < 1 || sched_getaffinity(0, sizeof allowed, &allowed) != 0 || CPU_COUNT(&allowed) <= threads) return "";
  cpu_set_t chosen;
  CPU_ZERO(&chosen);
  std::string list;
  for (int cpu = 0, taken = 0; cpu < CPU_SETSIZE && taken < threads; ++cpu)
    if (CPU_ISSET(cpu, &allowed)) {
      CPU_SET(cpu, &chosen);
      list += (taken++ ? "," : "") + std::to_string(cpu);
    }
  // Every thread of the process, the calling one among them (sched_setaffinity sets one
  // thread's mask; a pool started before this call keeps its own otherwise).
  bool all = true;
  std::error_code ec;
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task", ec)) {
    const pid_t tid = static_cast<pid_t>(std::atoi(task.path().filename().c_str()));
    if (tid > 0 && sched_setaffinity(tid, sizeof chosen, &chosen) != 0) all = false;
  }
  if (ec || !all) {
    sched_setaffinity(0, sizeof allowed, &allowed);  // best effort back to where it was
    return "";
  }
  return list;
}

std::string cpus_text(const std::string& cpus) {
  return (cpus.find(',') == std::string::npos ? "CPU " : "CPUs ") + cpus;
}

void apply_idle_spin_flag(const Args& a) {
  if (!a.has("--idle-spin-ms")) return;
  const int64_t ms = a.get_int("--idle-spin-ms", 0);
  KILN_CHECK(ms >= 0 && ms <= kernels::kMaxIdleSpinMs, "--idle-spin-ms must be 0 to ", kernels::kMaxIdleSpinMs,
             " (whole milliseconds)");
  kernels::set_idle_spin(std::chrono::milliseconds(ms));
}

}  // namespace kiln::cli
