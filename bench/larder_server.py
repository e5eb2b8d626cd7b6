"""A larder-server for the Python benches: a free loopback port, its data directory and
server.log under `tmp`. The caller stops the process and removes `tmp`."""
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
