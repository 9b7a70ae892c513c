"""Queries cost what the trace holds, never the length asked: every range
query of the module with lengths 0, 1, 2^20, 2^40 and 2^64-1 gives a result
or a clear error (ValueError for a range past the address space), in a
child interpreter whose peak resident memory is checked. Plus the module's
smaller argument rules: read(addr, 0), os.PathLike paths, origin depth and
run(thread=...) for watchpoints."""

import json
import os
import pathlib
import resource
import subprocess
import sys

import pytest

import backstep
from conftest import TIMEOUT, symbols

LENGTHS = [0, 1, 1 << 20, 1 << 40, (1 << 64) - 1]
PEAK_RSS_BOUND_KIB = 512 * 1024

# Runs in a child interpreter (a std::bad_alloc there aborts only it): one
# line of JSON per query, {"query", "length", "ok"|"error"}.
CHILD = r"""
import json, sys
import backstep
t = backstep.open(sys.argv[1])
address = int(sys.argv[2])
queries = {
    "writes": lambda n: [(a.position, a.address, len(a.data), a.old, a.new)
                         for a in t.writes(address, n)],
    "reads": lambda n: [a.position for a in t.reads(address, n)],
    "last_write": lambda n: getattr(t.last_write(address, n), "position", None),
    "next_write": lambda n: getattr(t.next_write(address, n), "position", None),
    "run": lambda n: t.cursor(0).run(watch=[(address, n, "w")]).position,
    "read": lambda n: len(t.cursor(0).read_known(address, n)[0]),
}
for length in json.loads(sys.argv[3]):
    for name, query in queries.items():
        if name == "reads" and not t.records_reads:
            continue
        if name == "read" and length > 1 << 20:
            continue  # a read returns the bytes: its cost is its length
        try:
            value = query(length)
            if name == "writes":
                value = [(p, a, n, o is None, w is None) for p, a, n, o, w in value]
            print(json.dumps({"query": name, "length": length, "ok": value}))
        except (ValueError, backstep.TraceError) as e:
            print(json.dumps({"query": name, "length": length,
                              "error": type(e).__name__ + ": " + str(e)}))
"""


def run_child(path, address):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    p = subprocess.run([sys.executable, "-c", CHILD, path, str(address), json.dumps(LENGTHS)],
                       capture_output=True, text=True, timeout=TIMEOUT,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(backstep.__path__[0])))
    assert p.returncode == 0, p.stderr[-2000:]
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if peak > before:  # the largest child so far is this one
        assert peak < PEAK_RSS_BOUND_KIB, f"peak resident memory {peak} KiB"
    return {(r["query"], r["length"]): r for r in map(json.loads, p.stdout.splitlines())}


def test_lengths_on_a_recording(loop_ucir):
    t = backstep.open(loop_ucir.path)
    results = run_child(loop_ucir.path, 0)
    for (query, length), r in results.items():
        if length == 0 and query != "read":
            assert "length must be positive" in r["error"], r
        else:
            assert "ok" in r, r
    # Everything the recording writes lies in [0, 2^64 - 1): the whole-space
    # query holds every write of a small range, and run() stops after the
    # first write of the trace.
    everything = results[("writes", (1 << 64) - 1)]["ok"]
    assert everything
    sym = symbols(loop_ucir.program)
    c = t.at("50%")
    for address, n in [(c.regs["rsp"] - 16, 32), (sym["counter"], 8)]:
        positions = {w.position for w in t.writes(address, n)}
        assert positions and positions <= {w[0] for w in everything}, hex(address)
    first = min(w[0] for w in everything)
    assert results[("run", (1 << 64) - 1)]["ok"] == first + 1
    assert results[("next_write", (1 << 64) - 1)]["ok"] == first
    assert results[("last_write", (1 << 64) - 1)]["ok"] == max(w[0] for w in everything)
    # Longer than MAX_VALUE_BYTES: old/new are None, not the range's bytes.
    assert all(o and w for (_, _, _, o, w) in everything)
    assert results[("read", 0)]["ok"] == 0


def test_lengths_on_physical_and_32_bit_traces(reven, workdir):
    # REVEN: virtual ranges are translated page by page, up to a limit.
    results = run_child(reven.path, 0x1000)
    assert "ok" in results[("writes", 1 << 20)]
    assert "at most" in results[("writes", 1 << 40)]["error"]
    assert "at most" in results[("run", 1 << 40)]["error"]
    # i386 (an x64dbg .trace32): the address space ends at 2^32.
    path = os.path.join(workdir, "bounded.trace32")
    subprocess.run([os.environ["BACKSTEP_MAKE_X64DBG"], path, "--i386"], check=True,
                   timeout=TIMEOUT)
    results = run_child(path, 0)
    assert "ok" in results[("writes", 1 << 20)] and "ok" in results[("reads", 1 << 20)]
    for query in ("writes", "reads", "last_write", "next_write", "run"):
        assert "32-bit address space" in results[(query, 1 << 40)]["error"], query


def test_past_the_address_space(loop_ucir):
    t = backstep.open(loop_ucir.path)
    for call in (lambda: t.writes(1, (1 << 64) - 1), lambda: t.last_write(1, (1 << 64) - 1),
                 lambda: t.cursor().run(watch=[(2, (1 << 64) - 2, "w")]),
                 lambda: t.cursor().read(1 << 63, 1 << 63)):
        with pytest.raises(ValueError, match="64-bit address space"):
            call()


def test_small_argument_rules(loop_ucir, bap):
    t = backstep.open(pathlib.Path(loop_ucir.path), cache_dir=None)
    assert len(t) > 0
    c = t.at("50%")
    assert c.read(c.regs["rsp"], 0) == b""
    assert c.read_known(c.regs["rsp"], 0) == (b"", b"")
    for depth in (-1, 0):
        with pytest.raises(ValueError):
            t.origin(c.regs["rsp"], 8, at=c.position, depth=depth)
    # run(thread=T) stops only at T's accesses, watchpoints included: the
    # BAP program's threads write counter (0x404000) and out (0x404010).
    two = backstep.open(bap.path)
    watch = [(0x404000, 0x18, "w")]
    writes = list(two.writes(*watch[0][:2]))
    other = next(w for w in writes if w.thread != writes[0].thread)
    stop = two.cursor(0).run(watch=watch, thread=other.thread)
    assert stop.position == other.position + 1, (stop, other)
    assert two.cursor(0).run(watch=watch).position == writes[0].position + 1
