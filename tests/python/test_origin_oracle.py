"""Provenance chains of tests/programs/copies.c, recorded at -O0 and -O2,
static and PIE, checked step by step against the ORIGIN lines of the
program's source (which variable feeds which; see the comment at its top).

Every named location must appear in order; between two of them only
register hops are allowed (the compiler picks the registers), each of which
must be written by its step's instruction. Every step's value is the value
the program copied, the state agrees with it (the writer's pc, the value
after the write) and positions strictly decrease. The chains cover equal
and unequal values, register-to-register copies, a stack local, a struct
field, memcpy, a function argument, a return value and an immediate."""

import os
import re

import pytest

import backstep
from conftest import check_chain_against_state, record, run

SOURCE = os.path.join(os.path.dirname(__file__), "..", "programs", "copies.c")
ORIGIN = re.compile(r"//\s*ORIGIN:\s*(.+?)\s*\(([^()]+)\)\s*$")
PIE_BASE = 0x555555554000  # the recorder disables ASLR, like gdb
VARIANTS = ["copies_O0_static", "copies_O2_static", "copies_O0_pie", "copies_O2_pie"]


def oracle():
    """[(locations, end)] from the source's ORIGIN lines."""
    chains = []
    with open(SOURCE) as f:
        for line in f:
            m = ORIGIN.search(line)
            if m:
                chains.append(([p.strip() for p in m.group(1).split("<-")], m.group(2)))
    return chains


def sized_symbols(program):
    """name -> (address, size) of the program's data symbols (nm -S)."""
    table = {}
    for line in run(["nm", "-S", program]).stdout.splitlines():
        parts = line.split()
        if len(parts) == 4:
            address, size = int(parts[0], 16), int(parts[1], 16)
            if program.endswith("_pie"):
                address += PIE_BASE
            table[parts[3]] = (address, size)
    return table


@pytest.fixture(scope="session", params=VARIANTS)
def copies(request, workdir, backstep_bin):
    return record(workdir, backstep_bin, request.param)


def resolve(name, sym, cursor):
    """A location of an ORIGIN line as ("reg", name) or ("mem", address)."""
    if name.startswith("%"):
        return ("reg", name[1:])
    if name.startswith("*"):
        pointer = sym[name[1:]][0]
        return ("mem", int.from_bytes(cursor.read(pointer, 8), "little"))
    base, _, offset = name.partition("+")
    return ("mem", sym[base][0] + (int(offset) if offset else 0))


def location_of(step):
    loc = step.location
    return ("reg", loc.register) if loc.register else ("mem", loc.address)


def destination(instruction):
    """The first operand of an Intel-syntax instruction."""
    return instruction.split(None, 1)[1].split(",")[0].strip()


def test_chains_follow_the_programs_copies(copies):
    sym = sized_symbols(copies.program)
    t = backstep.open(copies.path)
    end = t.cursor()
    end.goto(len(t))
    chains = oracle()
    assert len(chains) >= 10
    for names, end_reason in chains:
        where = [resolve(n, sym, end) for n in names]
        start, size = where[0][1], sym[names[0]][1]
        value = end.read(start, size)
        steps = t.origin(start, size, at="end", depth=40)
        text = f"{copies.name} {' <- '.join(names)}:\n" + "\n".join(map(str, steps))

        # The named locations, in order, with only register hops between.
        i = 0
        for k, want in enumerate(where):
            while k > 0 and i < len(steps) and steps[i].location.register and \
                    location_of(steps[i]) != want:
                i += 1
            assert i < len(steps), text
            assert location_of(steps[i]) == want, text
            if want[0] == "mem":
                assert steps[i].location.length == size, text
            i += 1
        assert i == len(steps), text
        assert steps[-1].end == end_reason, text
        assert all(s.end == "" for s in steps[:-1]), text

        # Each step against the state, and its instruction writes it.
        check_chain_against_state(t, steps, value, text)
        for step in steps:
            if step.position is None:
                continue
            if step.location.register:
                assert destination(step.instruction) == step.location.register, text
            else:
                assert "ptr [" in destination(step.instruction), text
