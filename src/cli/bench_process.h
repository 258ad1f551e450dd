// A child process spoken to in lines: kiln writes commands to its stdin and reads one reply
// line per command from its stdout; its stderr goes to a file so that a failing child's last
// words can become kiln's one-line error instead of mixing into kiln's own stderr.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace kiln::cli {

class LineProcess {
 public:
  // Starts argv[0] (looked up on PATH). Throws kiln::Error naming the program when it cannot
  // be started (e.g. not installed).
  LineProcess(const std::vector<std::string>& argv, const std::string& stderr_file);
  // Closes the child's stdin (its cue to exit), waits a moment for it, then kills it.
  ~LineProcess();
  LineProcess(const LineProcess&) = delete;
  LineProcess& operator=(const LineProcess&) = delete;

  // Writes `line` and a newline. Throws when the child has gone.
  void send(const std::string& line);
  // The next line of the child's stdout without its newline; nullopt once the child closed it.
  std::optional<std::string> receive();
  // The last non-empty line the child wrote to stderr ("" if none).
  std::string last_stderr_line() const;
  // Seconds all of the child's threads have wanted a CPU so far: run on one, or waited in a run
  // queue for one (the first two fields of Linux /proc/PID/task/*/schedstat); nullopt where that
  // cannot be read.
  std::optional<double> cpu_demand_seconds() const;
  // Returns once the child has stopped wanting the CPU: less than 10% of a core over a 5 ms
  // window (at most `limit_s`). A child's thread pool may spin for tens of milliseconds after
  // its reply (ONNX Runtime's workers: ~40 ms of one core on a 2-core VM), and a benchmark that
  // runs next would share the cores with it. Run-queue time counts: on a busy machine a spinning
  // thread descheduled for a whole window would otherwise look idle. Returns the seconds waited.
  double wait_until_idle(double limit_s) const;

 private:
  pid_t pid_ = -1;
  int to_child_ = -1;
  int from_child_ = -1;
  std::string pending_;  // read from stdout but not yet returned
  std::string stderr_file_;
};

}  // namespace kiln::cli
