// kiln: command-line entry. Verbs are thin: parse flags, call the library, print.
// Every kiln::Error becomes one line on stderr and exit code 1.
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <string>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "kiln/ir/error.h"
#include "kiln/kernels/parallel.h"
#include "verbs.h"

namespace {

const char* kUsage =
    "kiln - an optimizing compiler for ML models\n"
    "\n"
    "usage: kiln <verb> [options]\n"
    "\n"
    "verbs:\n"
    "  graph MODEL [--format text|dot|svg|json|ir] [--out FILE] [--dim NAME=N] [--shape INPUT=d0,d1,..]\n"
    "      every node with op, inputs/outputs, shapes, dtypes, FLOPs and bytes; totals; op histogram\n"
    "  run MODEL [--input NAME=FILE.npy ...] [--random [--seed N]] [--out DIR] [--threads N]\n"
    "            [--dim NAME=N|NAME=LO..HI] [--shape INPUT=d0,d1,..] [--expect DIR [--rtol R] [--atol A]]\n"
    "            [--repeat N] [--idle-spin-ms S] [--quiet]\n"
    "      run with the reference interpreter (or a compiled MODEL.kiln); outputs go to DIR/<output name>.npy\n"
    "  compile MODEL -o OUT.kiln [-O0..3] [--passes a,b] [--disable-pass NAME] [--pass-plugin LIB.so]\n"
    "            [--dim NAME=N|NAME=LO..HI] [--shape INPUT=d0,..] [--explain] [--report] [--dump-dir DIR]\n"
    "            [--print-after-all] [--cache-dir DIR] [--quiet]\n"
    "      optimize, lower to kernels, generate code, plan memory: one artifact that kiln run/bench load\n"
    "  quantize MODEL -o OUT (--calib DIR | --calib-random N | --dynamic | --precision bf16|fp16) [--method minmax|percentile[:P]|entropy]\n"
    "            [--per-channel|--per-tensor] [--reduce-range] [--activations u8|s8] [--exclude NODE,..] [--format kiln|qdq]\n"
    "            [--report] [--json FILE] [--eval DIR] [--runs N] [--dim NAME=N] [--shape INPUT=d0,..] [--seed N]\n"
    "            [--accuracy-budget X [--budget-metric auto|accuracy|cosine] [--eval-random N]]\n"
    "      INT8 post-training quantization to an artifact or a QDQ ONNX model; the report compares it with fp32\n"
    "  prune MODEL --ratio R -o OUT (--calib DIR | --calib-random N | --no-reconstruct) [--norm l1|l2] [--residuals]\n"
    "            [--multiple M] [--exclude NODE,..] [--format onnx|kiln] [--eval DIR] [--report] [--json FILE] [--runs N]\n"
    "      structured channel pruning with least-squares reconstruction; FLOPs, params, latency, accuracy before/after\n"
    "  bench MODEL|ARTIFACT [--vs ort [--ort-script FILE] [--ort-model FILE.onnx]] [--threads N] [--batch B] [--backends interp,compiled]\n            [--runs R] [--warmup W] [--block K] [--gap-ms G] [--idle-spin-ms S] [--input NAME=FILE.npy ...] [--seed N] [--dim ..] [--shape ..] [--json] [--check] [--quiet] [--no-pin]\n      median/p90 latency of kiln (interpreter, compiled) and, with --vs ort, ONNX Runtime, interleaved; outputs checked first;\n      --ort-model: ORT (and interp) run that model instead, e.g. the QDQ export of an int8 artifact;\n      --gap-ms: every backend idles G ms before each timed run (intermittent requests);\n      --idle-spin-ms: kiln's workers spin S ms after a run before they sleep (default 50, or KILN_IDLE_SPIN_MS);\n      fewer threads than CPUs: every backend pinned to the first N CPUs (--no-pin: not)\n"
    "  machine [--json] [--refresh] [--cache FILE]\n"
    "      this machine's measured peaks (FP32/INT8/BF16, DRAM and cache bandwidth), cached\n"
    "  perf MODEL --chip h100|a100|l4|orin|cpu|FILE.json [--batch 1,2,4,..] [--precision fp32|bf16|fp16|int8|fp8]\n"
    "       [--max-latency MS] [--measured MS[@BATCH]] [--dim BATCHDIM] [--json] [--svg FILE]\n"
    "  perf --llm layers=L,hidden=H,heads=A,kv_heads=K,ffn=F,vocab=V | --llm MODEL --context N --chip ..\n"
    "       [--tp 1,2,4,8] [--batch ..] [--precision ..(bf16)] [--link nvlink|pcie|GBPS] [--json]\n"
    "      analytic latency, memory and throughput per batch; LLM prefill/decode, KV cache, tensor parallelism\n"
    "  profile MODEL|ARTIFACT [-O0..3] [--threads N] [--runs R] [--top N] [--trace FILE.json] [--html FILE.html] [--json] [--explain] [--scaling] [--rerun] [--balance] [--vs ort [--ort-script FILE]] [--batch B] [--input NAME=FILE.npy ..] [--no-pin] [--placement close|far]\n      time per compiled kernel against the measured roofline: verdicts, ONNX nodes covered, suggestions; --scaling: each kernel at 1 thread against N;\n      --rerun: each kernel against a second call of itself right after (its data then in cache): what reaching its data cost;\n      --balance: each kernel's work per thread against its wall time: waiting for the slowest thread, waking and joins;\n      --vs ort: each kernel against ONNX Runtime's nodes for the same ONNX nodes (ORT's own profiler, runs interleaved);\n      --placement: only runs with the host's vCPUs close (sharing an L3) or far apart, the others dropped (kiln's runs; not --scaling's or ORT's)\n"
    "  ops\n"
    "      list the op table\n"
    "  opt MODEL [-O0..3] [--passes a,b*,c] [--disable-pass NAME] [--print-after-all] [--dump-dir DIR]\n"
    "            [--explain] [--pass-plugin LIB.so] [--dim NAME=N] [--shape INPUT=d0,..] [-o OUT.kir|OUT.onnx]\n"
    "      run a pass pipeline (default -O2) and print what each pass did (name* = repeat to a fixed point)\n"
    "  passes [--pass-plugin LIB.so]\n"
    "      list the passes with a one-line summary, and the pipelines of -O0..-O3\n"
    "  version\n"
    "\n"
    "MODEL is an ONNX file or a kiln textual-IR file. Bad input exits 1 with one line on stderr.\n";

}  // namespace

// The interpreter and the compression tools allocate and free a tensor of up to tens of MB per
// op. glibc serves each with a fresh mmap and unmaps it on free, so every op paid page faults
// and the kernel's zeroing: calibrating resnet50 at 224 x 224 on 120 images spent 3.7 of its
// 17 s in the kernel, 1.8 with the blocks kept in the heap for reuse (14.6 s). Peak resident
// memory of `kiln run` is unchanged (artifacts plan one arena; resnet50 int8 68.4 -> 69.3 MB).
static void keep_freed_blocks_for_reuse() {
#if defined(__GLIBC__)
  mallopt(M_MMAP_MAX, 0);             // large blocks from the heap, not from mmap ...
  mallopt(M_TRIM_THRESHOLD, INT_MAX);  // ... and kept there when freed
#endif
}

int main(int argc, char** argv) {
  keep_freed_blocks_for_reuse();
  if (argc < 2 || !std::strcmp(argv[1], "help") || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string verb = argv[1];
  for (int i = 2; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  try {
    kiln::kernels::idle_spin_from_env();  // a bad KILN_IDLE_SPIN_MS fails here, whatever the verb
    if (verb == "graph") return kiln::cli::verb_graph(argc - 2, argv + 2);
    if (verb == "run") return kiln::cli::verb_run(argc - 2, argv + 2);
    if (verb == "compile") return kiln::cli::verb_compile(argc - 2, argv + 2);
    if (verb == "quantize") return kiln::cli::verb_quantize(argc - 2, argv + 2);
    if (verb == "prune") return kiln::cli::verb_prune(argc - 2, argv + 2);
    if (verb == "bench") return kiln::cli::verb_bench(argc - 2, argv + 2);
    if (verb == "machine") return kiln::cli::verb_machine(argc - 2, argv + 2);
    if (verb == "perf") return kiln::cli::verb_perf(argc - 2, argv + 2);
    if (verb == "profile") return kiln::cli::verb_profile(argc - 2, argv + 2);
    if (verb == "ops") return kiln::cli::verb_ops(argc - 2, argv + 2);
    if (verb == "opt") return kiln::cli::verb_opt(argc - 2, argv + 2);
    if (verb == "passes") return kiln::cli::verb_passes(argc - 2, argv + 2);
    if (verb == "version" || verb == "--version") {
      std::printf("kiln %s\n", KILN_VERSION);
      return 0;
    }
    std::fprintf(stderr, "kiln: unknown verb '%s' (kiln --help lists them)\n", verb.c_str());
    return 2;
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln: %s\n", e.what());
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kiln: out of memory\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: internal error: %s\n", e.what());
  }
  return 1;
}
