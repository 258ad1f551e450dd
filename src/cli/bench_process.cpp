#include "bench_process.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "kiln/ir/error.h"

extern char** environ;

namespace kiln::cli {

LineProcess::LineProcess(const std::vector<std::string>& argv, const std::string& stderr_file)
    : stderr_file_(stderr_file) {
  KILN_CHECK(!argv.empty(), "LineProcess: no program given");
  // A child that dies while we write must become an error, not kill kiln with SIGPIPE.
  signal(SIGPIPE, SIG_IGN);
  int in[2], out[2];  // in: kiln -> child stdin; out: child stdout -> kiln
  KILN_CHECK(pipe2(in, O_CLOEXEC) == 0, "cannot create a pipe: ", std::strerror(errno));
  if (pipe2(out, O_CLOEXEC) != 0) {
    int e = errno;
    close(in[0]);
    close(in[1]);
    throw Error(str_cat("cannot create a pipe: ", std::strerror(e)));
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, in[0], STDIN_FILENO);
  posix_spawn_file_actions_adddup2(&fa, out[1], STDOUT_FILENO);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, stderr_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  int rc = posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  close(in[0]);
  close(out[1]);
  if (rc != 0) {
    close(in[1]);
    close(out[0]);
    pid_ = -1;
    throw Error(str_cat("cannot start '", argv[0], "': ", std::strerror(rc)));
  }
  to_child_ = in[1];
  from_child_ = out[0];
}

LineProcess::~LineProcess() {
  if (to_child_ >= 0) close(to_child_);
  if (from_child_ >= 0) close(from_child_);
  if (pid_ <= 0) return;
  // EOF on stdin ends the child; give it a moment to release its session, then insist.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(3);
  int status = 0;
  while (waitpid(pid_, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

void LineProcess::send(const std::string& line) {
  std::string s = line + "\n";
  size_t done = 0;
  while (done < s.size()) {
    ssize_t n = write(to_child_, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    KILN_CHECK(n > 0, "the child process has exited (", last_stderr_line(), ")");
    done += static_cast<size_t>(n);
  }
}

std::optional<std::string> LineProcess::receive() {
  for (;;) {
    if (auto nl = pending_.find('\n'); nl != std::string::npos) {
      std::string line = pending_.substr(0, nl);
      pending_.erase(0, nl + 1);
      return line;
    }
    char buf[4096];
    ssize_t n = read(from_child_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return std::nullopt;
    pending_.append(buf, static_cast<size_t>(n));
  }
}

std::optional<double> LineProcess::cpu_demand_seconds() const {
  std::error_code ec;
  const std::filesystem::path tasks = "/proc/" + std::to_string(pid_) + "/task";
  std::filesystem::directory_iterator it(tasks, ec);
  if (ec) return std::nullopt;
  double ns = 0;
  for (const auto& task : it) {
    std::ifstream in(task.path() / "schedstat");
    double run_ns = 0, wait_ns = 0;  // time on a CPU, time runnable in a run queue (nanoseconds)
    if (in >> run_ns >> wait_ns) ns += run_ns + wait_ns;  // a thread that just exited is skipped
  }
  return ns * 1e-9;
}

double LineProcess::wait_until_idle(double limit_s) const {
  using Clock = std::chrono::steady_clock;
  constexpr auto kWindow = std::chrono::milliseconds(5);
  constexpr double kIdleShare = 0.1;  // of one core over the window
  const auto start = Clock::now();
  std::optional<double> before = cpu_demand_seconds();
  if (!before) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // cannot tell: a fixed pause
    return 0.1;
  }
  for (;;) {
    std::this_thread::sleep_for(kWindow);
    const std::optional<double> now = cpu_demand_seconds();
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (!now || *now - *before < kIdleShare * std::chrono::duration<double>(kWindow).count() || waited >= limit_s)
      return waited;
    before = now;
  }
}

std::string LineProcess::last_stderr_line() const {
  std::ifstream in(stderr_file_);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  return last;
}

}  // namespace kiln::cli
