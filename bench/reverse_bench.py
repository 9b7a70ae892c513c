"""gdb's own `record full` against `backstep serve` on the same program.

The script builds bench/reverse_bench.c (cc -O0 -g -static) and records it
with `backstep record`. Both sides run the same gdb commands from the same
place (the BENCH-STOP line, after 20 calls of accumulate, ~60k instructions
into main), timed inside gdb with Python's perf_counter:
  1. reverse-stepi N
  2. reverse-continue to `break accumulate if n == 100` (the first call: 19
     conditional hits on the way back, evaluated by gdb on both sides)
`record full` records from main; backstep serves the trace of the whole run
over loopback TCP. Prints one line per measure with both times and the ratio.

  /usr/bin/python3 bench/reverse_bench.py --backstep build/cli/backstep [--steps 10000]
"""

import argparse
import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reverse_bench.c")


def timed_commands(steps):
    return [
        "python import time",
        "python t0 = time.perf_counter()",
        "reverse-stepi %d" % steps,
        'python print("BENCH reverse-stepi %.6f" % (time.perf_counter() - t0))',
        "break accumulate if n == 100",
        "python t0 = time.perf_counter()",
        "reverse-continue",
        'python print("BENCH reverse-continue %.6f" % (time.perf_counter() - t0))',
        "print n",
    ]


def run_gdb(commands, timeout=900):
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off"]
    for c in commands:
        argv += ["-ex", c]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=timeout).stdout
    times = {m.group(1): float(m.group(2)) for m in re.finditer(r"^BENCH (\S+) ([\d.]+)$", out,
                                                                  re.M)}
    if len(times) != 2 or not re.search(r"^\$1 = 100$", out, re.M):
        sys.exit("gdb run failed:\n" + out)
    return times, out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backstep", required=True)
    parser.add_argument("--steps", type=int, default=10000)
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="backstep-reverse-bench-")
    atexit.register(shutil.rmtree, work, True)
    program = os.path.join(work, "reverse_bench")
    subprocess.run(["cc", "-O0", "-g", "-static", "-o", program, SOURCE], check=True)
    with open(SOURCE) as f:
        stop_line = next(n for n, text in enumerate(f, 1) if "BENCH-STOP" in text)
    source_line = "reverse_bench.c:%d" % stop_line
    trace = os.path.join(work, "reverse_bench.ucir")
    subprocess.run([args.backstep, "record", "-o", trace, "--", program], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([args.backstep, "index", trace], check=True, stdout=subprocess.DEVNULL)

    t0 = time.perf_counter()
    record_full, _ = run_gdb(["file " + program, "break main", "run", "record full",
                              "break " + source_line, "continue", "delete"]
                             + timed_commands(args.steps))
    record_wall = time.perf_counter() - t0

    server = subprocess.Popen([args.backstep, "serve", trace, "--port", "0"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        address = None
        for line in server.stderr:
            match = re.match(r"listening on (\S+)", line)
            if match:
                address = match.group(1)
                break
        backstep, _ = run_gdb(["target remote " + address, "break " + source_line, "continue",
                               "delete"] + timed_commands(args.steps))
    finally:
        server.terminate()
        server.wait()

    print("program: bench/reverse_bench.c -O0 static (gdb record full of main up to line %d:"
          " %.1f s in all, recording included)" % (stop_line, record_wall))
    print("%-28s %12s %12s %8s" % ("measure", "record full", "backstep", "ratio"))
    for name, label in [("reverse-stepi", "reverse-stepi %d" % args.steps),
                        ("reverse-continue", "reverse-continue to bp")]:
        a, b = record_full[name], backstep[name]
        print("%-28s %10.3f s %10.3f s %7.1fx" % (label, a, b, a / b if b else float("inf")))


if __name__ == "__main__":
    main()
