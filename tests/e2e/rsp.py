"""A minimal GDB remote protocol client for the hostile tests of `backstep
serve`: raw packets (what no debugger would send), monitor commands, and the
server process's resident memory.

Usage:
    with rsp.Client(server.host, server.port) as c:
        c.send("qRcmd," + "history 0 0x10000000000".encode().hex())
        ok, text = c.monitor("history 0 0x10000000000")
    rsp.rss_kib(server.proc.pid)
"""

import socket

TIMEOUT = 30  # seconds for any one reply


class Client:
    def __init__(self, host, port, timeout=TIMEOUT):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        self.buf = b""
        self.send_raw(b"+")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self):
        self.sock.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, body):
        data = body.encode() if isinstance(body, str) else body
        self.send_raw(b"$%s#%02x" % (data, sum(data) & 0xFF))

    def recv(self):
        """The next packet's body (acknowledged); EOFError if the server closed."""
        while True:
            start = self.buf.find(b"$")
            end = self.buf.find(b"#", start + 1) if start >= 0 else -1
            if start >= 0 and end >= 0 and len(self.buf) >= end + 3:
                body = self.buf[start + 1:end]
                self.buf = self.buf[end + 3:]
                self.send_raw(b"+")
                return body.decode("latin-1")
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the server closed the connection")
            self.buf += chunk

    def ask(self, body):
        self.send(body)
        return self.recv()

    def monitor(self, command):
        """(ok, text) of `monitor COMMAND`: ok is False for an E reply, text
        the console output or the error's message."""
        self.send("qRcmd," + command.encode().hex())
        out = b""
        while True:
            reply = self.recv()
            if reply.startswith("O") and reply != "OK":
                out += bytes.fromhex(reply[1:])
            elif reply == "OK":
                return True, out.decode()
            elif reply.startswith("E"):
                return False, out.decode() + reply
            else:
                raise AssertionError("monitor %s: %r after %r" % (command, reply, out))


def rss_kib(pid):
    """VmRSS of process `pid` in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)
