#!/usr/bin/env python3
"""reverse-continue and continue to far stops through real gdb, end to end.

Issue 13's row "reverse-continue to a far breakpoint / watchpoint < 1 ms end to
end through gdb": generates a REVEN trace of --events events with
backstep_make_example (once, into --dir), indexes it, serves it over loopback
TCP and times, inside gdb, each command from the moment gdb starts it to the
moment it has printed the stop:
  * a breakpoint at the pc the generator executes exactly once (an interrupt
    handler's iret): `reverse-continue` to it from the end, `continue` to it
    from position 1;
  * a watchpoint on the address it writes exactly once: the same two moves.
Each stop's position (`monitor when`) is printed next to its time. Usage:
    /usr/bin/python3 bench/far_continue_bench.py --build build --events 100000000
"""
import argparse
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reverse_bench import Server, run_gdb  # noqa: E402


def timed(name, command):
    return ["python t0 = time.perf_counter()", command,
            'python print("BENCH %s %%.6f" %% (time.perf_counter() - t0))' % name,
            "monitor when"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--events", type=int, default=10000000)
    parser.add_argument("--dir", default="/tmp/backstep-farbench")
    args = parser.parse_args()
    backstep = os.path.join(args.build, "cli", "backstep")
    os.makedirs(args.dir, exist_ok=True)
    trace = os.path.join(args.dir, "trace-%d.bin" % args.events)
    info_path = trace + ".info"
    if not os.path.exists(info_path):
        t0 = time.perf_counter()
        out = subprocess.run([os.path.join(args.build, "tests", "backstep_make_example"), trace,
                              "--events", str(args.events), "--info"], check=True,
                             stdout=subprocess.PIPE, text=True).stdout
        with open(info_path, "w") as f:
            f.write(out)
        print("generated %s in %.1f s" % (trace, time.perf_counter() - t0))
    info = dict(line.split() for line in open(info_path) if len(line.split()) == 2)
    t0 = time.perf_counter()
    subprocess.run([backstep, "index", trace], check=True, stdout=subprocess.DEVNULL)
    print("index ready in %.1f s" % (time.perf_counter() - t0))

    # The generator plants a pc executed once (far_pc) and an address written
    # once (once_address); `monitor goto` arms a move that the next stepi makes.
    far_pc, far_event = int(info["far_pc"], 16), int(info["far_pc_event"])
    once, once_event = int(info["once_address"], 16), int(info["once_event"])
    size = min(int(info["once_size"]), 8)
    events = int(info["events"])
    server = Server(backstep, trace)
    try:
        commands = ["python import time", "target remote " + server.address,
                    "monitor goto end", "stepi", "break *0x%x" % far_pc]
        commands += timed("reverse-continue-breakpoint", "reverse-continue")
        commands += ["monitor goto 1", "stepi"]
        commands += timed("continue-breakpoint", "continue")
        commands += ["delete", "monitor goto end", "stepi",
                     "watch *(%s *) 0x%x" % ({1: "char", 2: "short", 4: "int"}.get(size, "long"),
                                             once)]
        commands += timed("reverse-continue-watchpoint", "reverse-continue")
        commands += ["monitor goto 1", "stepi"]
        commands += timed("continue-watchpoint", "continue")
        out = run_gdb(commands)
    finally:
        server.close()
    if os.environ.get("FAR_BENCH_DEBUG"):
        print(out)
    times = re.findall(r"^BENCH (\S+) ([\d.]+)$", out, re.M)
    positions = re.findall(r"^position (\d+)", out, re.M)
    if len(times) != 4:
        sys.exit("gdb run failed:\n" + out)
    print("%d events; break *0x%x executed once, at %d; watch 0x%x written once, at %d (load %s)"
          % (events, far_pc, far_event, once, once_event,
             open("/proc/loadavg").read().split()[0]))
    for (name, seconds), where in zip(times, positions):
        print("%-30s %9.3f ms   stopped at position %s" % (name, float(seconds) * 1e3, where))


if __name__ == "__main__":
    main()
