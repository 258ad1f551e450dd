#pragma once
namespace kiln::cli {
// Each verb parses its own flags from argv (after the verb) and returns the exit code.
int verb_graph(int argc, char** argv);
int verb_run(int argc, char** argv);
int verb_ops(int argc, char** argv);
int verb_bench(int argc, char** argv);
int verb_machine(int argc, char** argv);
int verb_opt(int argc, char** argv);
int verb_passes(int argc, char** argv);
int verb_perf(int argc, char** argv);
int verb_profile(int argc, char** argv);
int verb_compile(int argc, char** argv);
int verb_quantize(int argc, char** argv);
int verb_prune(int argc, char** argv);
}  // namespace kiln::cli
