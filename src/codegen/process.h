// Running the system compiler: finding a program on PATH and running it with its output
// captured in a file (no shell, so paths need no quoting).
#pragma once
#include <string>
#include <vector>

namespace kiln::codegen {

// `name` if it contains a '/', else the first executable PATH entry named `name`; "" if none.
std::string find_program(const std::string& name);

// Runs argv[0] (a path) with argv, stdout and stderr going to `log_path`. Returns the exit
// status (128 + signal number when killed). Throws kiln::Error when it cannot be started.
int run_program(const std::vector<std::string>& argv, const std::string& log_path);

}  // namespace kiln::codegen
