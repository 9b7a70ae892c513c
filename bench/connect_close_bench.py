#!/usr/bin/env python3
"""How long the next client waits after a storm of connect/close.

Serves a trace (`backstep serve TRACE --port 0`), then, --rounds times: opens
and closes --storm connections as fast as Python can, and times the next
client from connect to the stub's answer to `?` (one RSP round trip). Prints
each round's time and the median, and the server's resident memory before and
after. Usage (the trace: any trace, e.g. the example `scripts/demo` writes):
    /usr/bin/python3 bench/connect_close_bench.py --build build TRACE
"""
import argparse
import os
import socket
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from reverse_bench import Server  # noqa: E402


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def packet(body):
    return b"$%s#%02x" % (body, sum(body) & 0xFF)


def ask_stop_reason(host, port):
    """Connects, sends `?` and reads up to the reply's checksum."""
    with socket.create_connection((host, port), timeout=30) as s:
        s.sendall(packet(b"?"))
        reply = b""
        while not (b"#" in reply and len(reply) >= reply.index(b"#") + 3):
            chunk = s.recv(4096)
            if not chunk:
                raise SystemExit("the server closed the connection")
            reply += chunk.lstrip(b"+")
        return reply


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("trace")
    parser.add_argument("--build", default="build")
    parser.add_argument("--storm", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    server = Server(os.path.join(args.build, "cli", "backstep"), args.trace)
    host, port = server.address.rsplit(":", 1)
    port = int(port)
    try:
        ask_stop_reason(host, port)  # the index is loaded before the first round
        before = rss_kib(server.process.pid)
        times = []
        for n in range(args.rounds):
            for _ in range(args.storm):
                socket.create_connection((host, port)).close()
            t0 = time.perf_counter()
            ask_stop_reason(host, port)
            times.append(time.perf_counter() - t0)
            print("round %d: next client answered in %.2f ms after %d connect/close"
                  % (n + 1, times[-1] * 1e3, args.storm))
        after = rss_kib(server.process.pid)
        print("median %.2f ms; server RSS %d KiB before, %d KiB after"
              % (statistics.median(times) * 1e3, before, after))
    finally:
        server.close()


if __name__ == "__main__":
    main()
