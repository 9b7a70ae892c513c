"""Recorded C programs with debug info for the end-to-end tests of `backstep serve`.

tests/programs/scenario.c is built by recorder/CMakeLists.txt four ways; these
helpers record one build with `backstep record` (once per process), index it,
and find source lines by the "MARK:name" comments of the source.

Usage (the test takes `--programs DIR` besides util's arguments):
    programs = recorded.programs_dir_from_argv()     # before util.Env.from_argv()
    rec = recorded.record(env, programs, "O0_pie")   # .trace, .program, .entry
    recorded.LINES["counter-add"]                    # a line number of scenario.c
"""

import argparse
import os
import re
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "programs", "scenario.c")
PIE_BASE = 0x555555554000  # where Linux loads a PIE with ASLR off (the recorder disables it)


def _marks():
    lines = {}
    with open(SOURCE) as f:
        for number, text in enumerate(f, 1):
            match = re.search(r"MARK:([a-z-]+)", text)
            if match and number > 10:  # skip the header comment
                lines[match.group(1)] = number
    return lines


LINES = _marks()


def programs_dir_from_argv():
    parser = argparse.ArgumentParser()
    parser.add_argument("--programs", required=True)
    args, rest = parser.parse_known_args()
    sys.argv[1:] = rest
    return args.programs


def elf_entry(path):
    """(e_type, e_entry) of an ELF64 file."""
    with open(path, "rb") as f:
        header = f.read(32)
    assert header[:4] == b"\x7fELF", path
    e_type, = struct.unpack_from("<H", header, 16)
    e_entry, = struct.unpack_from("<Q", header, 24)
    return e_type, e_entry


class Recording:
    def __init__(self, trace, program, entry, events):
        self.trace = trace
        self.program = program
        self.entry = entry      # AT_ENTRY the kernel gave the program
        self.events = events


_cache = {}


def record(env, programs, variant):
    """Records scenario_<variant> into the scratch directory (once)."""
    if variant not in _cache:
        program = os.path.join(programs, "scenario_" + variant)
        path = os.path.join(env.dir, "scenario_%s.ucir" % variant)
        out = util.run([env.backstep, "record", "-o", path, "--", program])
        assert "total 35 counter 35" in out, out
        util.run([env.backstep, "index", path])
        info = util.run([env.backstep, "info", path])
        events = int(re.search(r"^events:\s+(\d+)", info, re.M).group(1))
        e_type, e_entry = elf_entry(program)
        entry = e_entry + (PIE_BASE if e_type == 3 else 0)  # ET_DYN
        _cache[variant] = Recording(util.Trace(path, {}), program, entry, events)
    return _cache[variant]
