#!/usr/bin/python3
"""The conversion matrix: every source trace, converted to every writable
format with `backstep convert`, then compared with the source at sampled
positions: the number of events, whether reads are recorded, the threads,
every known register of every thread, the known bytes of a stack window and
of the code at pc. Unknown must stay unknown: a register or byte known in one
and not the other is "lost" or "invented". A cell is "ok", "refused:
<message>" or the differences found.

Report (the table of docs/formats/README.md):

    tests/tools/convert_matrix.py BACKSTEP PYTHONPATH NAME=TRACE...

Test (ctest convert_matrix): makes the sources in a temporary directory (a
single-thread and a two-thread recording with signals and reads, a generated
REVEN trace, a two-thread x64dbg trace, a BAP trace, gdb's own tfile), prints
the table and fails unless every cell converts with nothing lost, shifted or
invented, or refuses with exactly one line on stderr that names the output
file, leaving no file behind:

    tests/tools/convert_matrix.py --test --backstep B --pythonpath P \\
        --programs DIR --make-example X --make-x64dbg Y --make-bap Z --samples DIR
"""

import argparse
import os
import subprocess
import sys
import tempfile

SAMPLES = 12


def differences(backstep, src, dst):
    """Short descriptions of what differs, each with its first position."""
    a, b = backstep.open(src), backstep.open(dst)
    out = []
    if len(a) != len(b):
        out.append(f"{len(a)} events became {len(b)}")
    if a.records_reads != b.records_reads:
        out.append(f"records_reads {a.records_reads} became {b.records_reads}")
    n = min(len(a), len(b))
    found = {}  # kind -> (first position, [names])

    def note(kind, p, name=None):
        first, names = found.setdefault(kind, (p, []))
        if name and name not in names:
            names.append(name)

    ca, cb = a.cursor(), b.cursor()
    for p in sorted({0, n} | {n * i // SAMPLES for i in range(SAMPLES)}):
        ca.goto(p)
        cb.goto(p)
        if ca.pc != cb.pc:
            note("pc differs", p)
        for t in cb.threads:
            if t not in ca.threads:
                note("threads invented", p, str(t))
        for t in ca.threads:
            if t not in cb.threads:
                note("threads lost", p, str(t))
                continue
            ra, rb = ca.regs.thread(t), cb.regs.thread(t)
            for name in set(ra) | set(rb):
                va = ra.bytes(name) if name in ra else None
                vb = rb.bytes(name) if name in rb else None
                if va is not None and vb is None:
                    note("registers lost", p, name)
                elif va is None and vb is not None:
                    note("registers invented", p, name)
                elif va != vb:
                    note("registers differ", p, name)
        sp = ca.regs.get("rsp") or ca.regs.get("esp")
        ranges = ([(sp - 256, 512)] if sp else []) + ([(ca.pc, 16)] if ca.pc else [])
        for address, length in ranges:
            try:
                da, ma = ca.read_known(address, length)
                db, mb = cb.read_known(address, length)
            except Exception as e:  # a physical trace's translation, ...
                note("memory unreadable: " + str(e).splitlines()[0], p)
                continue
            if any(ma[i] and (not mb[i] or da[i] != db[i]) for i in range(length)):
                note("memory lost or differs", p)
            if any(mb[i] and not ma[i] for i in range(length)):
                note("memory invented", p)
    for kind, (first, names) in found.items():
        listed = ""
        if names:
            names.sort()
            listed = " " + ",".join(names[:4]) + (f",+{len(names) - 4}" if len(names) > 4 else "")
        out.append(f"{kind}{listed} (from position {first})")
    return out


def writable_formats(binary):
    """The writable formats, from help's registry list."""
    listing = subprocess.run([binary, "help"], capture_output=True, text=True).stdout
    section = listing.split("\nFormats")[1].split("\n\n")[0].splitlines()[1:]
    return [line.split()[0] for line in section if "read, write" in line]


def cell(backstep, binary, path, out):
    """(text, problem): the cell's text and, when it breaks the matrix's
    rule, why."""
    p = subprocess.run([binary, "convert", path, "-o", out, "--to", out.rsplit(".", 1)[1]],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        lines = p.stderr.strip().splitlines()
        message = lines[0] if lines else "?"
        text = "refused: " + message.replace(out, "OUT").replace(path, "IN")
        if p.returncode != 1 or len(lines) != 1 or not message.startswith(f"backstep: {out}: "):
            return text, f"exit {p.returncode}, stderr {p.stderr!r}: not one line naming {out}"
        if os.path.exists(out):
            return text, f"{out} exists after a refusal"
        return text, None
    diff = differences(backstep, path, out)
    return ("ok", None) if not diff else ("; ".join(diff), "lossy")


def matrix(binary, pythonpath, sources, work):
    """Prints the table (converted files go to `work`); returns the problems
    found."""
    sys.path.insert(0, pythonpath)
    import backstep
    targets = writable_formats(binary)
    problems = []
    print("| source | --to | result |\n|---|---|---|")
    for name, path in sources:
        for target in targets:
            text, problem = cell(backstep, binary, path, os.path.join(work, f"{name}.{target}"))
            print(f"| {name} | {target} | {text} |", flush=True)
            if problem:
                problems.append(f"{name} --to {target}: {problem}: {text}")
    return problems


def make_sources(args, work):
    """The test's sources, made in `work`: [(name, path)]."""

    def run(*argv):
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, timeout=300)

    def record(name, program):
        path = os.path.join(work, name + ".ucir")
        run(args.backstep, "record", "-o", path, "--", os.path.join(args.programs, program))
        return path

    reven = os.path.join(work, "reven", "trace.bin")
    os.makedirs(os.path.dirname(reven))
    run(args.make_example, reven, "--events", "20000", "--seed", "3")
    x64dbg = os.path.join(work, "program.trace64")
    run(args.make_x64dbg, x64dbg)
    bap = os.path.join(work, "two_threads.frames")
    run(args.make_bap, bap)
    return [
        ("recording-1-thread", record("signals", "signals_O0_static")),
        ("recording-2-threads", record("threads", "worker_signal_O0_static")),
        ("reven", reven),
        ("x64dbg-2-threads", x64dbg),
        ("bap-2-threads", bap),
        ("gdb-tfile", os.path.join(args.samples, "work_amd64.tf")),
    ]


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--test":
        parser = argparse.ArgumentParser()
        parser.add_argument("--test", action="store_true")
        for option in ("backstep", "pythonpath", "programs", "make-example", "make-x64dbg",
                       "make-bap", "samples"):
            parser.add_argument("--" + option, required=True)
        args = parser.parse_args()
        with tempfile.TemporaryDirectory(prefix="convert-sources-") as work:
            problems = matrix(args.backstep, args.pythonpath, make_sources(args, work), work)
        for problem in problems:
            print("FAIL " + problem)
        sys.exit(1 if problems else 0)
    binary, pythonpath, *sources = sys.argv[1:]
    matrix(binary, pythonpath, [s.split("=", 1) for s in sources],
           tempfile.mkdtemp(prefix="convert-matrix-"))


if __name__ == "__main__":
    main()
