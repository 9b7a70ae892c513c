#!/usr/bin/python3
"""Prints the conversion matrix: every source trace given, converted to
every writable format with `backstep convert`, then compared with the
source at sampled positions (events, every known register of every thread,
known bytes of a stack window and of the code at pc); unknown must stay
unknown. A cell is "ok", "refused: <message>" or the differences found.

    tests/tools/convert_matrix.py BACKSTEP PYTHONPATH NAME=TRACE...

Not a test: it reports the state of the converters (the lossy cells are
listed, not asserted)."""

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
        for t in ca.threads:
            if t not in cb.threads:
                note("threads lost", p, str(t))
                continue
            ra, rb = ca.regs.thread(t), cb.regs.thread(t)
            for name in ra:
                va = ra.bytes(name)
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
            listed = " " + ",".join(names[:4]) + (f",+{len(names) - 4}" if len(names) > 4 else "")
        out.append(f"{kind}{listed} (from position {first})")
    return out


def main():
    binary, pythonpath, *sources = sys.argv[1:]
    sys.path.insert(0, pythonpath)
    import backstep
    # The writable formats, from help's registry list.
    listing = subprocess.run([binary, "help"], capture_output=True, text=True).stdout
    section = listing.split("\nFormats")[1].split("\n\n")[0].splitlines()[1:]
    targets = [line.split()[0] for line in section if "read, write" in line]
    work = tempfile.mkdtemp(prefix="convert-matrix-")
    for source in sources:
        name, path = source.split("=", 1)
        for target in targets:
            out = os.path.join(work, f"{name}.{target}")
            p = subprocess.run([binary, "convert", path, "-o", out, "--to", target],
                               capture_output=True, text=True)
            if p.returncode != 0:
                message = p.stderr.strip().splitlines()[0] if p.stderr.strip() else "?"
                cell = "refused: " + message.replace(out, "OUT").replace(path, "IN")
            else:
                diff = differences(backstep, path, out)
                cell = "ok" if not diff else "; ".join(diff)
            print(f"| {name} | {target} | {cell} |", flush=True)


if __name__ == "__main__":
    main()
