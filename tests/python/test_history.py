"""writes()/reads() iterators equal the stub's `monitor history` output, and
their old/new values equal what a cursor reads before and after each
access."""

import re

import backstep
from conftest import symbols

LINE = re.compile(r"event (\d+) \(thread (\d+)\) (wrote|read) (\d+) bytes? at (0x[0-9a-f]+):"
                  r"((?: [0-9a-f]{2})*)( \.\.\.)?$")


def history(stub, address, length):
    out = stub.monitor(f"history {address:#x} {length} --max 1000000")
    if out.strip() == "no recorded access":
        return []
    items = []
    for line in out.splitlines():
        m = LINE.match(line)
        assert m, line
        data = bytes.fromhex(m.group(6).replace(" ", ""))
        items.append((int(m.group(1)), int(m.group(2)), m.group(3) == "wrote", int(m.group(5), 16),
                      int(m.group(4)), data))
    return items


def module_history(t, address, length):
    accesses = list(t.writes(address, length))
    if t.records_reads:
        accesses += list(t.reads(address, length))
    accesses.sort(key=lambda a: (a.position, a.is_write, a.address))
    return [(a.position, a.thread, a.is_write, a.address, len(a.data), a.data[:64])
            for a in accesses]


def check_values(t, accesses, address, length, limit=40):
    c = t.cursor()
    for a in accesses[:limit] + accesses[-limit:]:
        c.goto(a.position)
        data, mask = c.read_known(address, length)
        before = data if all(mask) else None
        assert a.old == before, a
        if a.is_write:
            c.goto(a.position + 1)
            data, mask = c.read_known(address, length)
            assert a.new == (data if all(mask) else None), a
        else:
            assert a.new == a.old


# The counter both hand-made partial programs read and write (with reads
# recorded, so reads() is compared too).
PARTIAL_COUNTER = (0x404000, 8)


def ranges_of(fixture, t):
    if fixture.name in ("x64dbg", "bap"):
        assert t.records_reads
        return [PARTIAL_COUNTER]
    if fixture.name == "reven":
        f = fixture.facts
        ranges = []
        if f.get("once_address"):
            ranges.append((f["once_address"], f["once_size"]))
        c = t.at("50%")
        ranges.append((c.regs["rsp"] - 16, 32))
        return ranges
    sym = symbols(fixture.program)
    c = t.at("50%")
    return [(c.regs["rsp"] - 16, 32)] + (
        [(sym["copy_dst"], 8), (sym["hop_memory"], 8)] if "copy_dst" in sym else [])


def test_iterators_equal_monitor_history(any_trace, stub_for):
    t = backstep.open(any_trace.path)
    stub = stub_for(any_trace.path)
    compared = 0
    for address, length in ranges_of(any_trace, t):
        mine = module_history(t, address, length)
        assert mine == history(stub, address, length), (any_trace, hex(address), length)
        compared += len(mine)
        writes = list(t.writes(address, length))
        check_values(t, writes, address, length)
        # start/end select by position, lazily.
        if len(writes) > 2:
            mid = writes[len(writes) // 2].position
            assert [w.position for w in t.writes(address, length, start=mid)] == \
                [w.position for w in writes if w.position >= mid]
            assert [w.position for w in t.writes(address, length, end=mid)] == \
                [w.position for w in writes if w.position < mid]
    assert compared > 0


def test_last_and_next_write(reven):
    t = backstep.open(reven.path)
    f = reven.facts
    w = t.last_write(f["once_address"], f["once_size"])
    assert w.position == f["once_event"]
    assert t.next_write(f["once_address"], f["once_size"]).position == f["once_event"]
    assert t.last_write(f["once_address"], f["once_size"], before=f["once_event"]) is None
    assert t.next_write(f["once_address"], f["once_size"], start=f["once_event"] + 1) is None
    assert w.new == t.at(w.position + 1).read(f["once_address"], f["once_size"])
