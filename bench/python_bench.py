#!/usr/bin/env python3
"""Python module benchmark: iterate every write to a hot stack slot and every
position at a hot pc of a generated REVEN trace, in items/s, next to the same
queries through `backstep serve` (monitor history; breakpoint + continue
round trips for the pc).

    /usr/bin/python3 bench/python_bench.py --build build [--events 10000000]

The trace is generated once into --dir (default /tmp/backstep-pybench) and
reused; its index is built (and timed) on first open.
"""

import argparse
import os
import re
import socket
import subprocess
import sys
import time


class Stub:
    """`backstep serve --port 0` and a minimal GDB remote protocol client."""

    def __init__(self, backstep, trace):
        self.proc = subprocess.Popen([backstep, "serve", trace, "--port", "0"],
                                     stderr=subprocess.PIPE, text=True)
        for line in self.proc.stderr:
            m = re.search(r"listening on 127\.0\.0\.1:(\d+)", line)
            if m:
                self.sock = socket.create_connection(("127.0.0.1", int(m.group(1))))
                break
        self.buf = b""
        self.sock.sendall(b"+")
        self.send("QStartNoAckMode")
        self.recv()

    def send(self, body):
        data = body.encode()
        self.sock.sendall(b"$%s#%02x" % (data, sum(data) & 0xFF))

    def recv(self):
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                body = self.buf[start + 1:end]
                self.buf = self.buf[end + 3:]
                return body
            self.buf += self.sock.recv(1 << 20)

    def monitor(self, command):
        self.send("qRcmd," + command.encode().hex())
        out = b""
        while True:
            reply = self.recv()
            if reply == b"OK":
                return out.decode()
            if reply.startswith(b"O"):
                out += bytes.fromhex(reply[1:].decode())
            else:
                raise RuntimeError(reply)

    def close(self):
        self.sock.close()
        self.proc.terminate()
        self.proc.wait()


def rate(n, seconds):
    return f"{n} in {seconds:.3f} s = {n / seconds if seconds else float('inf'):,.0f}/s"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--dir", default="/tmp/backstep-pybench")
    ap.add_argument("--stub-pc-hits", type=int, default=20000,
                    help="breakpoint round trips through the stub (capped: one packet pair each)")
    args = ap.parse_args()
    sys.path.insert(0, os.path.join(args.build, "python"))
    import backstep

    os.makedirs(args.dir, exist_ok=True)
    trace = os.path.join(args.dir, f"trace-{args.events}.bin")
    if not os.path.exists(trace):
        t0 = time.perf_counter()
        subprocess.run([os.path.join(args.build, "tests", "backstep_make_example"), trace,
                        "--events", str(args.events)], check=True, stdout=subprocess.DEVNULL)
        print(f"generated {trace} in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    t = backstep.open(trace, progress=False)
    print(f"open ({'index reused' if t._t.index_reused else 'index built'}): "
          f"{time.perf_counter() - t0:.2f} s, {len(t):,} events")

    # The hot slot: of the 8-byte slots around the stack pointer at mid-trace,
    # the most written in the first 5% of the trace.
    c = t.at(len(t) // 2)
    rsp = c.regs["rsp"]
    sample_end = max(len(t) // 20, 1000)
    slot = max((rsp + 8 * k for k in range(-64, 64)),
               key=lambda a: sum(1 for _ in t.writes(a, 8, end=sample_end)))
    pc = c.pc

    t0 = time.perf_counter()
    n_writes = sum(1 for _ in t.writes(slot, 8))
    module_writes = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_pcs = sum(1 for _ in t.positions_at_pc(pc))
    module_pcs = time.perf_counter() - t0
    t0 = time.perf_counter()
    counted = len(t.positions_at_pc(pc))
    module_len = time.perf_counter() - t0
    assert counted == n_pcs

    stub = Stub(os.path.join(args.build, "cli", "backstep"), trace)
    t0 = time.perf_counter()
    out = stub.monitor(f"history {slot:#x} 8 --max {n_writes + 1}")
    stub_writes = time.perf_counter() - t0
    n_stub_writes = sum(1 for line in out.splitlines() if " wrote " in line)
    # Positions at a pc through the stub: a breakpoint and one `c` per hit.
    stub.send(f"Z0,{pc:x},1")
    stub.recv()
    hits = 0
    t0 = time.perf_counter()
    while hits < min(args.stub_pc_hits, n_pcs):
        stub.send("c")
        reply = stub.recv()
        if b"replaylog" in reply:
            break
        hits += 1
    stub_pcs = time.perf_counter() - t0
    stub.close()

    print(f"hot stack slot {slot:#x} (8 bytes), writes:")
    print(f"  module t.writes():         {rate(n_writes, module_writes)}")
    print(f"  stub monitor history:      {rate(n_stub_writes, stub_writes)}")
    print(f"hot pc {pc:#x}, positions:")
    print(f"  module positions_at_pc():  {rate(n_pcs, module_pcs)}")
    print(f"  module len():              {counted} in {module_len * 1e6:.0f} us")
    print(f"  stub breakpoint + c:       {rate(hits, stub_pcs)}")


if __name__ == "__main__":
    main()
