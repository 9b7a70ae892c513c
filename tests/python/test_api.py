"""The module's API on the generated REVEN trace, whose maker reports the
facts checked here (far_pc and its first event, the once-written bytes):
positions at a pc (lazy, counted), run with breakpoints and watches,
stepping, errors."""

import os
import re

import pytest

import backstep


def test_trace_facts(reven, tfile, loop_ucir):
    t = backstep.open(reven.path)
    assert (t.format, t.arch, t.physical) == ("reven", "i386:x86-64", True)
    assert len(t) == reven.facts["events"]
    assert t.threads and all(isinstance(x, int) for x in t.threads)
    assert backstep.open(tfile.path).format == "tfile"
    u = backstep.open(loop_ucir.path)
    assert (u.format, u.physical) == ("usercorn", False)
    assert repr(t).startswith("<backstep.Trace")


def test_positions_at_pc(reven):
    t = backstep.open(reven.path)
    far = reven.facts["far_pc"]
    hits = t.positions_at_pc(far)
    assert hits.first() == reven.facts["far_pc_event"]
    listed = list(hits)
    assert len(hits) == len(listed) > 0
    assert listed == sorted(set(listed))
    assert hits.last() == listed[-1]
    c = t.cursor()
    for p in listed[:20] + listed[-20:]:
        c.goto(p)
        assert c.pc == far
    # A pc that is hot: counting equals iterating, on sub-ranges too.
    c.goto("50%")
    hot = c.pc
    every = list(t.positions_at_pc(hot))
    assert len(t.positions_at_pc(hot)) == len(every)
    mid = every[len(every) // 2]
    sub = t.positions_at_pc(hot, start=mid, end=len(t) - 1)
    assert len(sub) == len([p for p in every if mid <= p < len(t) - 1]) == len(list(sub))
    it = iter(t.positions_at_pc(hot))
    assert it.__length_hint__() == len(every)
    next(it)
    assert it.__length_hint__() == len(every) - 1
    assert len(t.positions_at_pc(0xdead0000)) == 0 and not t.positions_at_pc(0xdead0000)


def test_run_breakpoints_and_watches(reven):
    t = backstep.open(reven.path)
    f = reven.facts
    c = t.cursor()
    stop = c.run(breakpoints=[f["far_pc"]])
    assert (stop.reason, stop.position, stop.address) == ("breakpoint", f["far_pc_event"],
                                                         f["far_pc"])
    assert c.position == f["far_pc_event"] and c.pc == f["far_pc"]
    c.goto(0)
    stop = c.run(watch=[(f["once_address"], f["once_size"], "w")])
    assert (stop.reason, stop.position, stop.event) == ("watch", f["once_event"] + 1,
                                                        f["once_event"])
    c.goto("end")
    stop = c.run(forward=False, watch=[(f["once_address"], f["once_size"], "w")])
    assert (stop.reason, stop.position) == ("watch", f["once_event"])
    stop = c.run(forward=False, breakpoints=[0xdead0000])
    assert (stop.reason, stop.position) == ("begin", 0)
    stop = c.run(breakpoints=[0xdead0000], fence=(None, 100))
    assert (stop.reason, stop.position) == ("fence", 100)
    with pytest.raises(ValueError):
        c.run(watch=[(0x1000, 8, "x")])


def test_steps_and_goto(reven):
    t = backstep.open(reven.path)
    c = t.at(10)
    assert c.step() == 1 and c.position == 11
    assert c.step(-1) == -1 and c.position == 10
    assert c.step(-100) == -10 and c.position == 0
    assert c.goto("end").position == len(t)
    assert c.step() == 0
    assert t.at("50%").position == len(t) // 2
    with pytest.raises(ValueError):
        t.at(len(t) + 1)
    with pytest.raises(KeyError):
        c.regs["nosuchregister"]
    assert "rax" in list(c.regs)
    assert c.event_kind is None and t.at(0).event_kind == "instruction"


def test_errors_name_the_file(workdir, reven, loop_ucir):
    missing = os.path.join(workdir, "missing.bin")
    with pytest.raises(backstep.TraceError) as err:
        backstep.open(missing)
    assert missing in str(err.value) and err.value.file == missing
    # A truncated copy of a REVEN trace: the error names the file and offset.
    cut = os.path.join(workdir, "cut", "trace.bin")
    os.makedirs(os.path.dirname(cut), exist_ok=True)
    with open(reven.path, "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:100])
    with pytest.raises(backstep.TraceError) as err:
        backstep.open(cut)
    assert cut in str(err.value)
    assert err.value.file == cut
    assert err.value.offset is None or err.value.offset <= 100
    # The offset attribute is the one the message names, if it names one.
    named = re.search(r"offset (0x[0-9a-f]+)", str(err.value))
    assert err.value.offset == (int(named.group(1), 16) if named else None)
    t = backstep.open(reven.path)
    with pytest.raises(backstep.TraceError) as err:
        t._t.cursor().seek(len(t) + 5)
    assert err.value.position == len(t) + 5 and err.value.file == reven.path
    assert err.value.code == "OutOfRange"
    with pytest.raises(backstep.TraceError) as err:
        backstep.open(reven.path).reads(0x10, 1)  # REVEN traces record no reads
    assert "records no memory reads" in str(err.value)
