#!/usr/bin/env python3
"""The native engine's two phases next to the program's native run and the emu engine.

  python3 bench/record_native_bench.py --backstep build/cli/backstep \
      [--runs 5] PROGRAM [ARGS] [-- PROGRAM [ARGS]]...
  (default programs: build/recorder/programs/record_compute and record_syscalls)

Per program: the native wall time (fork + exec + run, best of --runs), the
record phase of `backstep record --engine native` (the time it prints, best
of --runs; and the CPU time, recorder plus program, of `--log-only` runs, what
a loaded machine does not inflate) and its ratio to native, the
materialization (instructions and rate it prints, last run), and the emu
engine's rate on the same program (`backstep record --engine emu`).
Markdown table on stdout.
"""

import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile
import time


def native_seconds(argv, runs):
    best = None
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.DEVNULL, check=False)
        elapsed = time.perf_counter() - start
        best = elapsed if best is None else min(best, elapsed)
    return best


def cpu_seconds(argv, runs):
    """Best children CPU time (user + system) of `argv` over `runs` runs."""
    best = None
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        best = cpu if best is None else min(best, cpu)
    return best


def record(backstep, engine, argv, out):
    p = subprocess.run([backstep, "record", "--engine", engine, "-o", out, "--"] + argv,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
    return p.stderr


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backstep", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("programs", nargs="*")
    args = parser.parse_args()
    programs, current = [], []
    for word in args.programs:
        if word == "--":
            if current:
                programs.append(current)
            current = []
        else:
            current.append(word)
    if current:
        programs.append(current)
    if not programs:
        base = os.path.join(os.path.dirname(os.path.dirname(args.backstep)), "recorder", "programs")
        programs = [[os.path.join(base, "record_compute")], [os.path.join(base, "record_syscalls")]]
    print("| program | native (CPU) | record phase (CPU) | x native (CPU) | system calls | "
          "materialized instructions | materialization/s | emu engine/s |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "t.ucir")
        for argv in programs:
            native = native_seconds(argv, args.runs)
            native_cpu = cpu_seconds(argv, args.runs)
            phase_cpu = cpu_seconds([args.backstep, "record", "--engine", "native", "--log-only",
                                     "-o", out, "--"] + argv, args.runs)
            phase, text = None, ""
            for _ in range(args.runs):
                text = record(args.backstep, "native", argv, out)
                m = re.search(r"record phase ([\d.]+) s \((\d+) system calls", text)
                if not m:
                    sys.exit("record --engine native failed: " + text)
                phase = float(m.group(1)) if phase is None else min(phase, float(m.group(1)))
            syscalls = int(m.group(2))
            m = re.search(r"materialized (\d+) instructions, \d+ syscalls in ([\d.]+) s", text)
            insns, secs = int(m.group(1)), float(m.group(2))
            emu = record(args.backstep, "emu", argv, out)
            e = re.search(r"([\d]+) instructions/s", emu)
            print("| %s | %.1f ms (%.1f) | %.1f ms (%.1f) | %.1fx (%.1fx) | %d | %d | %.0f | %s |" % (
                " ".join(os.path.basename(a) if i == 0 else a for i, a in enumerate(argv)),
                native * 1e3, native_cpu * 1e3, phase * 1e3, phase_cpu * 1e3, phase / native,
                phase_cpu / max(native_cpu, 1e-4), syscalls, insns, insns / secs,
                e.group(1) if e else "refused"))


if __name__ == "__main__":
    main()
