"""What the Python benches share: a larder-server on a free loopback port (its data directory
and server.log under `tmp`; the caller stops the process and removes `tmp`), the pipeline of
SET/GET commands they stream, and the heap setting for a process that times big replies.
tests/server/bad_clients_test.py uses the last two as well, so that its figures and the
benches' are measured the same way."""
import ctypes
import os
import socket
import subprocess
import sys
import time


def keep_big_buffers_on_the_heap():
    """Call once in a process that times replies of 128 KiB or more. With glibc's defaults each
    such receive buffer is mmap()ed and unmapped on free, so every reply costs the client fresh
    page faults (2-4 ms per 256 KiB GET on the 2-core machine, against 0.1-0.2 ms with these
    thresholds, which glibc's own dynamic threshold reaches once a 4 MiB block was freed)."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 4 << 20)
    libc.mallopt(m_trim_threshold, 8 << 20)


def encode(*args):
    """One RESP command (an array of bulk strings) from str, bytes or int arguments."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def set_get_pipeline(n):
    """n commands, SET then GET of small values on 1,000 keys, as one request, and the exact
    bytes of their replies: (request, expected)."""
    cmds, want = [], []
    for i in range(n // 2):
        k, v = "pl:%d" % (i % 1000), b"v%d" % i
        cmds.append(encode("SET", k, v))
        cmds.append(encode("GET", k))
        want.append(b"+OK\r\n$%d\r\n%s\r\n" % (len(v), v))
    return b"".join(cmds), b"".join(want)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(binary, tmp, args=()):
    """Starts `binary` with `args` and waits until it accepts connections; returns
    (process, port). Exits the bench, naming the log, if the server exits or never listens."""
    port = free_port()
    with open(os.path.join(tmp, "server.log"), "wb") as log:  # the child keeps its own handle
        proc = subprocess.Popen([binary, "--port", str(port), "--dir",
                                 os.path.join(tmp, "data")] + list(args),
                                stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 30
    while time.time() < deadline:
        if proc.poll() is not None:
            sys.exit(f"larder-server exited; see {tmp}/server.log")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            time.sleep(0.05)
    proc.kill()
    sys.exit(f"larder-server did not start; see {tmp}/server.log")
