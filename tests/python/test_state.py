"""Registers and memory read through the module equal `backstep dump` at
random positions of every format's fixtures (REVEN generated, tfile
exported, usercorn recorded)."""

import random

import pytest

import backstep
from conftest import run


def dump(backstep_bin, trace, position, mem=None):
    argv = [backstep_bin, "dump", trace, "--at", str(position), "--regs"]
    if mem:
        argv += ["--mem", hex(mem[0]), str(mem[1])]
    out = run(argv).stdout.splitlines()
    regs, memory = {}, []
    lines = iter(out[1:])
    for line in lines:
        if line.startswith("memory "):
            break
        if line.startswith("#"):
            continue
        name, value = line.split()
        regs[name] = value
    for line in lines:
        hexpart = line.split(":", 1)[1].split("  |")[0].split()
        memory += [None if b == "??" else int(b, 16) for b in hexpart]
    return out[0], regs, memory


def positions(trace, count, seed):
    rng = random.Random(seed)
    n = len(trace)
    return sorted({0, n, *(rng.randrange(0, n + 1) for _ in range(count))})


def test_registers_and_memory_equal_dump(any_trace, backstep_bin):
    t = backstep.open(any_trace.path)
    assert len(t) > 0
    c = t.cursor()
    checked_memory = 0
    for p in positions(t, 4, 12345):
        c.goto(p)
        assert c.position == p
        rsp = c.regs["rsp"]
        mem = (rsp - 32, 64) if rsp is not None and rsp >= 32 else None
        if any_trace.name in ("x64dbg", "bap"):  # partial: the counter is what is known
            mem = (0x404000, 16)
        header, regs, memory = dump(backstep_bin, any_trace.path, p, mem)
        assert header.startswith(f"position {p} of {len(t)}, thread {c.thread}")
        assert regs, header
        for name, text in regs.items():
            raw = c.regs.bytes(name)
            mine = "<unknown>" if raw is None else "0x" + raw[::-1].hex()
            assert mine == text, f"{any_trace} position {p} register {name}"
        assert c.pc == c.regs["rip"]  # None where unknown (partial traces)
        if mem:
            data, mask = c.read_known(*mem)
            assert [b if k else None for b, k in zip(data, mask)] == memory
            checked_memory += sum(mask)
    if any_trace.name != "tfile":  # tfile frames hold only what they collected
        assert checked_memory > 0


def test_unknown_memory_raises_with_ranges(reven):
    t = backstep.open(reven.path)
    c = t.at(0)
    # Past the generator's mappings: nothing is known there.
    with pytest.raises(backstep.Unknown) as err:
        c.read(0x10, 4)
    assert err.value.ranges == [(0x10, 4)]
    data, mask = c.read_known(0x10, 4)
    assert mask == b"\0\0\0\0" and data == b"\0\0\0\0"
