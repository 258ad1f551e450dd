#!/usr/bin/python3
"""Paired A/B timing on a shared, noisy host: the two sides alternate round by round, and the
result is the median of the per-round B/A ratios (the host's slow minutes hit both sides).

  scripts/ab_bench.py model MODEL.onnx THREADS ROUNDS A B
      Each side compiles an artifact (kiln compile --dim N=1; DIM= in the environment to
      change or drop it, several separated by spaces: DIM="seq=1 past=127"), then `kiln bench ARTIFACT --threads T --runs 20 --json` alternates
      (BENCH= in the environment adds flags to it: DIM="" BENCH="--batch 1" times an artifact
      compiled with its batch symbolic, as `kiln bench MODEL.onnx` and the zoo table do).
  scripts/ab_bench.py int8 MODEL.onnx THREADS ROUNDS A B
      The same with INT8 artifacts: each side runs kiln quantize MODEL --calib-random 16 --seed 1
      (the same calibration on both sides) with the DIM flags.
  scripts/ab_bench.py bf16 MODEL.onnx THREADS ROUNDS A B
      The same with BF16 artifacts (kiln quantize MODEL --precision bf16).
  scripts/ab_bench.py conv FILTER ROUNDS A B
      build/bench/conv_bench --benchmark_filter=FILTER, 3 repetitions a round, per benchmark
      (REPS= and MIN_TIME= in the environment change them: many short rounds, REPS=2
      MIN_TIME=0.1, follow a noisy host's swings more closely; REPS is at least 2, since one
      repetition reports no median, and MIN_TIME is seconds without a unit).

A side is  KILN_BINARY[:NAME=VALUE,...]  (the environment it compiles or runs under), e.g.
  scripts/ab_bench.py model build/zoo/resnet18/model.onnx 2 12 build/bin/kiln:KILN_BLOCKED_LAYOUT=0 build/bin/kiln
  scripts/ab_bench.py conv 'Resnet50/64/56/64/3/' 6 build/bench/conv_bench:KILN_CONV_TACTIC=direct \\
      build/bench/conv_bench:KILN_CONV_TACTIC=direct,KILN_CONV_BLOCKED=1
"""
import json
import os
import statistics
import subprocess
import sys
import tempfile


def side(spec):
    binary, _, env = spec.partition(":")
    e = dict(os.environ)
    for kv in filter(None, env.split(",")):
        k, _, v = kv.partition("=")
        e[k] = v
    return binary, e


def run(cmd, env):
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if p.returncode != 0:
        sys.exit("ab_bench: %s failed: %s" % (" ".join(cmd), (p.stderr or p.stdout).strip().splitlines()[-1:]))
    return p.stdout


def model_ab(model, threads, rounds, sides, kind="fp32"):
    tmp = tempfile.mkdtemp(prefix="ab_bench_")
    dim = os.environ.get("DIM", "N=1")
    arts = []
    for i, (binary, env) in enumerate(sides):
        art = os.path.join(tmp, "%d.kiln" % i)
        verb = {"fp32": ["compile", model, "-o", art],
                "int8": ["quantize", model, "-o", art, "--calib-random", "16", "--seed", "1"],
                "bf16": ["quantize", model, "-o", art, "--precision", "bf16"]}[kind]
        run([binary] + verb + [f for d in dim.split() for f in ("--dim", d)], env)
        arts.append(art)
    ms = [[], []]
    for r in range(rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            out = run([sides[i][0], "bench", arts[i], "--threads", str(threads), "--runs", "20", "--json"] +
                      os.environ.get("BENCH", "").split(), sides[i][1])
            ms[i].append(json.loads(out)["kiln"]["median_ms"])
    report("kiln bench %s, %s threads" % (model, threads), {"model": ms})


def conv_ab(filt, rounds, sides):
    if int(os.environ.get("REPS", "3")) < 2:
        sys.exit("ab_bench: REPS must be at least 2 (conv_bench reports no median for one repetition)")
    ms = {}
    for r in range(rounds):
        for i in ((0, 1) if r % 2 == 0 else (1, 0)):
            extra = ["--benchmark_min_time=" + os.environ["MIN_TIME"]] if os.environ.get("MIN_TIME") else []
            out = run([sides[i][0], "--benchmark_filter=" + filt,
                       "--benchmark_repetitions=" + os.environ.get("REPS", "3"),
                       "--benchmark_report_aggregates_only=true"] + extra, sides[i][1])
            for line in out.splitlines():
                if "_median" in line:
                    f = line.split()
                    ms.setdefault(f[0].replace("/real_time_median", ""), [[], []])[i].append(float(f[1]))
    report("conv_bench %s" % filt, ms)


def report(title, series):
    print("%s: median of A, of B, and the median of the per-round B/A ratios" % title)
    for name, (a, b) in series.items():
        ratios = [y / x for x, y in zip(a, b)]
        print("  %-40s A %9.3f  B %9.3f  B/A %.3f  (rounds: %s)" % (name, statistics.median(a), statistics.median(b),
                                                               statistics.median(ratios),
                                                               " ".join("%.2f" % x for x in ratios)))


def main():
    a = sys.argv[1:]
    if len(a) == 6 and a[0] in ("model", "int8", "bf16"):
        model_ab(a[1], int(a[2]), int(a[3]), [side(a[4]), side(a[5])], {"model": "fp32"}.get(a[0], a[0]))
    elif len(a) == 5 and a[0] == "conv":
        conv_ab(a[1], int(a[2]), [side(a[3]), side(a[4])])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
