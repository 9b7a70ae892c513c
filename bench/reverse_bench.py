"""gdb's own `record full` against `backstep serve` on the same program.

The script builds bench/reverse_bench.c (cc -O0 -g -static) and records it
with `backstep record`. Every side runs the same gdb commands from the same
place (the BENCH-STOP line, ~100k instructions into main), timed inside gdb
with Python's perf_counter, in this order (each starts where the last ended):
  reverse-next over a call     back over `total += accumulate(1000)` (a call
                               that runs a 1000-iteration loop)
  next over a call             forward over the same line
  reverse-stepi N, stepi N     N instructions back, then forward again
  (untimed) reverse-continue to the loop body of accumulate(1000) at i == 500
  next L, reverse-next L       L lines forward through the loop body, and back
  reverse-finish               out of accumulate, back to the call in main
  reverse-continue             to `break accumulate if n == 100` (the first
                               call: 19 conditional hits on the way back)
After each command the script prints $pc (and i where there is one): the
outputs of every side must agree, or the script fails.

Sides: `record full` (recording from main), and each --backstep binary
serving the trace over loopback TCP and over `target remote | backstep serve
--stdio`. Several --backstep NAME=PATH run interleaved (same load), and
--rounds repeats everything; the table shows min-max over the rounds.

--packets also counts the packets gdb sends for one of each command against
`backstep serve --log` (commands separated by `monitor when`, whose own
packet is not counted).

  /usr/bin/python3 bench/reverse_bench.py --backstep build/cli/backstep \
      [--backstep before=/path/to/old/backstep] [--steps 10000] [--lines 200] \
      [--rounds 1] [--packets] [--no-stdio]
"""

import argparse
import atexit
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reverse_bench.c")


def source_line(tag):
    with open(SOURCE) as f:
        return "reverse_bench.c:%d" % next(n for n, text in enumerate(f, 1) if tag in text)


def measures(steps, lines):
    """(name, label, commands) in the order they run; `name` is timed."""
    body = source_line("BENCH-LOOP-BODY")
    return [
        ("reverse-next-call", "reverse-next over a call (1000-iteration loop)", ["reverse-next"]),
        ("next-call", "next over that call", ["next"]),
        ("reverse-stepi", "reverse-stepi %d" % steps, ["reverse-stepi %d" % steps]),
        ("stepi", "stepi %d" % steps, ["stepi %d" % steps]),
        ("reverse-continue-cond", "reverse-continue, 500 conditional hits",
         ["break %s if n == 1000 && i == 500" % body, "reverse-continue"]),
        ("next-lines", "next %d (loop body, line by line)" % lines, ["delete", "next %d" % lines]),
        ("reverse-next-lines", "reverse-next %d (loop body)" % lines, ["reverse-next %d" % lines]),
        ("reverse-finish", "reverse-finish (out of accumulate)", ["reverse-finish"]),
        ("reverse-continue", "reverse-continue to bp (19 cond. hits)",
         ["break accumulate if n == 100", "reverse-continue"]),
    ]


def timed_commands(steps, lines):
    out = ["python import time"]
    for name, _, commands in measures(steps, lines):
        out += commands[:-1]
        out += ["python t0 = time.perf_counter()", commands[-1],
                'python print("BENCH %s %%.6f" %% (time.perf_counter() - t0))' % name,
                'python print("STATE %s %%s %%s" %% (gdb.parse_and_eval("$pc"),'
                ' gdb.selected_frame().name()))' % name]
    out.append("print n")
    return out


def run_gdb(commands, timeout=1800):
    argv = ["gdb", "-q", "-batch", "-nx", "-ex", "set pagination off", "-ex", "set confirm off"]
    for c in commands:
        argv += ["-ex", c]
    return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=timeout).stdout


def parse_run(out, count):
    times = {m.group(1): float(m.group(2))
             for m in re.finditer(r"^BENCH (\S+) ([\d.]+)$", out, re.M)}
    states = re.findall(r"^STATE .*$", out, re.M)
    if len(times) != count or not re.search(r"^\$\d+ = 100$", out, re.M):
        sys.exit("gdb run failed:\n" + out)
    return times, states


class Server:
    """`backstep serve TRACE --port 0` in the background. Its stderr (a line
    per client) goes to a file: a pipe nobody reads would fill and stall the
    server."""

    def __init__(self, backstep, trace, log=None):
        argv = [backstep, "serve", trace, "--port", "0"] + (["--log", log] if log else [])
        self.stderr = tempfile.NamedTemporaryFile("w+", prefix="backstep-serve-", suffix=".log")
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=self.stderr)
        self.address = None
        for _ in range(600):
            with open(self.stderr.name) as f:
                match = re.search(r"listening on (\S+)", f.read())
            if match:
                self.address = match.group(1)
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.1)
        sys.exit("backstep serve did not start")

    def close(self):
        self.process.terminate()
        self.process.wait()
        self.stderr.close()


def setup_backstep(connect):
    return [connect, "break " + source_line("BENCH-STOP"), "continue", "delete"]


def run_backstep(backstep, trace, transport, steps, lines):
    count = len(measures(steps, lines))
    if transport == "stdio":
        return parse_run(run_gdb(setup_backstep("target remote | %s serve --stdio %s"
                                                % (backstep, trace))
                                 + timed_commands(steps, lines)), count)
    server = Server(backstep, trace)
    try:
        return parse_run(run_gdb(setup_backstep("target remote " + server.address)
                                 + timed_commands(steps, lines)), count)
    finally:
        server.close()


def run_record_full(program, steps, lines):
    out = run_gdb(["file " + program, "break main", "run", "record full",
                   "break " + source_line("BENCH-STOP"), "continue", "delete"]
                  + timed_commands(steps, lines))
    return parse_run(out, len(measures(steps, lines)))


PACKET_COMMANDS = [
    ("reverse-next over a call", ["reverse-next"]),
    ("next over a call", ["next"]),
    ("reverse-stepi", ["reverse-stepi"]),
    ("stepi", ["stepi"]),
    (None, ["break %s if n == 1000 && i == 500" % source_line("BENCH-LOOP-BODY"),
            "reverse-continue", "delete"]),
    ("next (one line, no call)", ["next"]),
    ("reverse-next (one line, no call)", ["reverse-next"]),
    ("reverse-stepi, in the loop", ["reverse-stepi"]),
    ("stepi, in the loop", ["stepi"]),
    ("reverse-finish", ["reverse-finish"]),
]


def packet_kind(payload):
    for prefix in ("vCont;r", "vCont;s", "vCont;c", "vCont?", "qXfer", "qRcmd", "bs", "bc"):
        if payload.startswith(prefix):
            return prefix
    return payload[:1]


def count_packets(backstep, trace, work):
    """{label: Counter(kind -> packets)} for one of each PACKET_COMMANDS."""
    log = os.path.join(work, "packets-%d.log" % os.getpid())
    server = Server(backstep, trace, log)
    commands = setup_backstep("target remote " + server.address)
    for label, cmds in PACKET_COMMANDS:
        commands += ["monitor when"] + cmds
    commands.append("monitor when")
    try:
        out = run_gdb(commands)
    finally:
        server.close()
    segments, current = [], None
    with open(log) as f:
        for line in f:
            match = re.match(r"\S+ \S+ #\d+ <- (.*)$", line)
            if not match:
                continue
            for payload in re.findall(r"\$([^#$]*)#", match.group(1)):
                if payload.startswith("qRcmd,"):  # `monitor when`: a separator
                    current = collections.Counter()
                    segments.append(current)
                elif current is not None:
                    current[packet_kind(payload)] += 1
    labels = [label for label, _ in PACKET_COMMANDS]
    if len(segments) != len(labels) + 1:
        sys.exit("packet log does not have one segment per command:\n" + out)
    return {label: seg for label, seg in zip(labels, segments) if label}


def print_packets(counts_by_side):
    sides = list(counts_by_side)
    print("\npackets gdb sends (one command each, from the BENCH-STOP line):")
    print("%-34s " % "command" + " ".join("%-40s" % s for s in sides))
    for label, _ in PACKET_COMMANDS:
        if not label:
            continue
        cells = []
        for side in sides:
            c = counts_by_side[side][label]
            detail = ", ".join("%d %s" % (n, k) for k, n in sorted(c.items(), key=lambda kv: -kv[1]))
            cells.append("%-40s" % ("%d: %s" % (sum(c.values()), detail)))
        print("%-34s " % label + " ".join(cells))


def span(values):
    lo, hi = min(values), max(values)
    return "%.3f" % lo if len(values) == 1 or abs(hi - lo) < 0.0005 else "%.3f-%.3f" % (lo, hi)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--backstep", action="append", required=True,
                        help="PATH or NAME=PATH; several run interleaved")
    parser.add_argument("--steps", type=int, default=10000)
    parser.add_argument("--lines", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--packets", action="store_true")
    parser.add_argument("--no-stdio", action="store_true")
    parser.add_argument("--no-record-full", action="store_true")
    args = parser.parse_args()
    binaries = []
    for spec in args.backstep:
        name, _, path = spec.rpartition("=")
        binaries.append((name or "backstep", os.path.abspath(path)))
    work = tempfile.mkdtemp(prefix="backstep-reverse-bench-")
    atexit.register(shutil.rmtree, work, True)
    program = os.path.join(work, "reverse_bench")
    subprocess.run(["cc", "-O0", "-g", "-static", "-o", program, SOURCE], check=True)
    trace = os.path.join(work, "reverse_bench.ucir")
    subprocess.run([binaries[0][1], "record", "-o", trace, "--", program], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run([binaries[0][1], "index", trace], check=True, stdout=subprocess.DEVNULL)

    if args.packets:
        print_packets({name: count_packets(path, trace, work) for name, path in binaries})

    transports = ["tcp"] + ([] if args.no_stdio else ["stdio"])
    sides = ([] if args.no_record_full else ["record full"]) + [
        "%s %s" % (name, t) for name, _ in binaries for t in transports]
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    states = {}
    record_wall = []
    for _ in range(args.rounds):
        runs = []
        if not args.no_record_full:
            runs.append(("record full", lambda: run_record_full(program, args.steps, args.lines)))
        for name, path in binaries:
            for t in transports:
                runs.append(("%s %s" % (name, t),
                             lambda p=path, tt=t: run_backstep(p, trace, tt, args.steps,
                                                               args.lines)))
        for side, run in runs:
            t0 = time.perf_counter()
            got, state = run()
            if side == "record full":
                record_wall.append(time.perf_counter() - t0)
            states[side] = state
            for k, v in got.items():
                times[side][k].append(v)
    if args.rounds == 0:
        return
    reference = states[sides[0]]
    for side in sides[1:]:
        if states[side] != reference:
            sys.exit("%s stops elsewhere than %s:\n%s\n%s" % (side, sides[0],
                                                              "\n".join(states[side]),
                                                              "\n".join(reference)))
    print("\nprogram: bench/reverse_bench.c -O0 static; %d round(s); load average %s" %
          (args.rounds, " ".join("%.2f" % x for x in os.getloadavg())))
    if record_wall:
        print("gdb record full session (recording ~100k instructions included): %s s" %
              span(record_wall))
    header = "| measure | " + " | ".join(sides)
    ratio_sides = [s for s in sides if s != "record full"] if "record full" in sides else []
    header += "".join(" | ratio %s" % s for s in ratio_sides) + " |"
    print(header)
    print("|" + "---|" * (header.count("|") - 1))
    for name, label, _ in measures(args.steps, args.lines):
        row = "| %s | " % label + " | ".join(span(times[s][name]) + " s" for s in sides)
        for s in ratio_sides:
            a, b = min(times["record full"][name]), min(times[s][name])
            row += " | %.1fx" % (a / b if b else float("inf"))
        print(row + " |")


if __name__ == "__main__":
    main()
