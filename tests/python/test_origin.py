"""Provenance chains on tests/programs/dataflow.c, recorded with `backstep
record`: the value 0x1122334455667788 goes source_value (initial image) ->
rax -> hop_memory -> rdi (argument of take_arg) -> arg_sink -> rbx ->
copy_src -> memcpy (a register inside glibc) -> copy_dst. The chain from
copy_dst at the end must be exactly that, step by step, and every step's
value must be what the state holds there."""

import re

import pytest

import backstep
from conftest import check_chain_against_state, run, symbols

VALUE = (0x1122334455667788).to_bytes(8, "little")
PIE_BASE = 0x555555554000  # the recorder disables ASLR, like gdb
RIP = r"\[rip [+-] 0x[0-9a-f]+\]"
MEM = r"\[[^\]]+\]"  # any memory operand: -O0 PIE computes &copy_src into rax


def expected_chain(sym):
    """(location, instruction pattern, pc rule) per step after memcpy's."""
    return [
        (("mem", sym["copy_src"]), rf"mov qword ptr {MEM}, rbx$", "main"),
        (("reg", "rbx"), rf"mov rbx, qword ptr {RIP}$", "main"),
        (("mem", sym["arg_sink"]), rf"mov qword ptr {RIP}, rdi$", "take_arg"),
        (("reg", "rdi"), rf"mov rdi, qword ptr {RIP}$", "main"),
        (("mem", sym["hop_memory"]), rf"mov qword ptr {RIP}, rax$", "main"),
        (("reg", "rax"), rf"mov rax, qword ptr {RIP}$", "main"),
    ]


def program_symbols(fixture):
    sym = symbols(fixture.program)
    if "pie" in fixture.program:
        sym = {k: v + PIE_BASE for k, v in sym.items()}
    return sym


def in_function(sym, pc, name):
    # Function bounds: from its symbol to the next symbol above it.
    start = sym[name]
    following = [a for a in sym.values() if a > start]
    return start <= pc < min(following)


def location_of(step):
    loc = step.location
    return ("reg", loc.register) if loc.register else ("mem", loc.address)


@pytest.mark.parametrize("which", ["dataflow_static", "dataflow_pie"])
def test_chain_is_the_programs_data_flow(which, request):
    fixture = request.getfixturevalue(which)
    sym = program_symbols(fixture)
    t = backstep.open(fixture.path)
    steps = t.origin(sym["copy_dst"], 8, at="end", depth=20)
    text = "\n".join(map(str, steps))

    # memcpy: the store into copy_dst, from a register it loaded from copy_src.
    assert location_of(steps[0]) == ("mem", sym["copy_dst"]), text
    assert steps[0].location.length == 8
    assert not in_function(sym, steps[0].pc, "main"), text
    assert re.match(r"mov qword ptr \[", steps[0].instruction), text
    assert steps[1].location.register in {"rax", "rbx", "rcx", "rdx", "rsi", "rdi", "r8", "r9",
                                         "r10", "r11"}, text
    assert re.match(rf"mov {steps[1].location.register}, qword ptr \[", steps[1].instruction), text
    assert not in_function(sym, steps[1].pc, "main"), text

    rest = steps[2:]
    chain = expected_chain(sym)
    assert len(rest) == len(chain) + 1, text
    for step, (location, pattern, function) in zip(rest, chain):
        assert location_of(step) == location, text
        assert re.match(pattern, step.instruction), text
        assert in_function(sym, step.pc, function), text
        assert step.end == "", text
    last = rest[-1]
    assert location_of(last) == ("mem", sym["source_value"]), text
    assert last.position is None and last.end == "initial image", text

    # Every value is the program's, and the state agrees with each step.
    check_chain_against_state(t, steps, VALUE, text)
    # Positions strictly decrease along the chain.
    known = [s.position for s in steps if s.position is not None]
    assert known == sorted(known, reverse=True)


def test_depth_and_cli_and_monitor_agree(dataflow_static, backstep_bin, stub_for):
    sym = program_symbols(dataflow_static)
    t = backstep.open(dataflow_static.path)
    short = t.origin(sym["copy_dst"], 8, depth=3)
    assert len(short) == 3 and short[-1].end == "depth"
    assert short == t.origin(sym["copy_dst"], 8, depth=20)[:2] + [short[2]]
    cli = run([backstep_bin, "origin", dataflow_static.path, hex(sym["copy_dst"]), "8",
               "--depth", "20"]).stdout
    stub = stub_for(dataflow_static.path)
    stub.monitor("goto end")
    stub.packet("s")  # performs the armed goto
    while not stub._recv_packet().startswith((b"T", b"S")):
        pass
    assert stub.monitor(f"origin {sym['copy_dst']:#x} 8 20") == cli
    assert cli.count("\n#") == len(t.origin(sym["copy_dst"], 8, depth=20)) - 1
    assert "(initial image)" in cli


def test_origin_errors(dataflow_static):
    t = backstep.open(dataflow_static.path)
    with pytest.raises(backstep.TraceError) as err:
        t.origin(0x1000, 0)
    assert err.value.code == "InvalidArgument"
    with pytest.raises(ValueError):
        t.origin(0x1000, 8, at=len(t) + 1)
