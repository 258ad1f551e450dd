#!/usr/bin/env python3
"""Fails when an object file built with ISA flags (-mavx2, -mavxvnni, -mavx512*) emits a kiln
symbol with vague linkage (weak or unique) that an object built with other flags emits too.

The linker keeps one copy of such a symbol for the whole program, so the other object's callers
run code compiled for the wrong ISA, or a template built around the other file's tile: GCC 12
gave a generic lambda inside detail::dispatch_epilogue weak linkage although its template
argument lived in an anonymous namespace, and the AVX-VNNI table ran the AVX2 narrow table's
5-row tile on its 6-row panels (every AVX-VNNI convolution wrong; only a CPU with AVX-VNNI ran
it). Only kiln's own symbols are checked: the standard library's templates (std::vector) are the
same code at any ISA level we build for.

usage: check_isa_symbols.py BUILD_DIR
"""
import collections
import json
import os
import re
import subprocess
import sys


def main():
    build = sys.argv[1]
    with open(os.path.join(build, "compile_commands.json")) as f:
        entries = json.load(f)
    objects = {}
    for e in entries:
        out = re.search(r"(?:^|\s)-o\s+(\S+)", e["command"])
        if not out:
            continue
        path = os.path.normpath(os.path.join(e["directory"], out.group(1)))
        if "/fuzz/" in path or not os.path.exists(path):
            continue
        objects[path] = tuple(sorted(set(re.findall(r"\s-m(avx\w*|fma|f16c)", e["command"]))))
    if not any(objects.values()):
        print("check_isa_symbols: no object built with ISA flags found under", build)
        return 1
    owners = collections.defaultdict(list)
    paths = sorted(objects)
    for i in range(0, len(paths), 64):  # one nm per 64 objects: "path:address type symbol" lines
        nm = subprocess.run(["nm", "-A"] + paths[i:i + 64], capture_output=True, text=True, check=True).stdout
        for line in nm.splitlines():
            where, _, rest = line.partition(":")
            parts = rest.split()
            if len(parts) == 3 and parts[1] in ("W", "V", "u") and "4kiln" in parts[2]:
                owners[parts[2]].append((where, objects[where]))
    bad = []
    for sym, where in owners.items():
        if len({isa for _, isa in where}) > 1:
            name = subprocess.run(["c++filt", sym], capture_output=True, text=True).stdout.strip()
            files = sorted({os.path.basename(p) + (" [-m" + " -m".join(i) + "]" if i else " [no ISA flags]") for p, i in where})
            bad.append(f"{name[:160]}\n    emitted by: {', '.join(files)}")
    print(f"check_isa_symbols: {len(objects)} objects, {sum(1 for i in objects.values() if i)} with ISA flags, "
          f"{len(owners)} kiln symbols with vague linkage")
    for b in bad:
        print("shared across ISA flags:", b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
