"""Test harness for larder-server: starts the real binary on a free port with a temp data
directory, and speaks raw RESP for byte-exact checks. The server is always killed and the
temp directory removed (stop() / tearDown)."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

SERVER = os.environ.get("LARDER_SERVER") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin", "larder-server")


def _die_with_parent():
    """Runs in the child before exec: SIGTERM it if the test process dies (even by SIGKILL,
    e.g. a CTest timeout), so no server outlives its test."""
    import ctypes
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ServerProcess:
    """One larder-server process. `args` are extra --option value pairs; `wrapper` is a command
    prefix (e.g. ["prlimit", "--nofile=256:256"])."""

    def __init__(self, args=(), conf_text=None, tmp=None, wrapper=()):
        self.own_tmp = tmp is None
        self.tmp = tmp or tempfile.mkdtemp(prefix="larder-it-")
        self.port = free_port()
        self.conf = None
        if conf_text is not None:
            self.conf = os.path.join(self.tmp, "larder.conf")
            with open(self.conf, "w") as f:
                f.write(conf_text)
        self.args = list(args)
        self.wrapper = list(wrapper)
        self.proc = None
        self.log_path = os.path.join(self.tmp, "server.log")

    def start(self, timeout=20):
        cmd = self.wrapper + [SERVER]
        if self.conf:
            cmd.append(self.conf)
        cmd += ["--port", str(self.port), "--dir", os.path.join(self.tmp, "data")]
        cmd += ["--max-disk-bytes", "256mb", "--memtable-bytes", "64mb"]
        cmd += self.args
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     preexec_fn=_die_with_parent)
        return self.wait_listening(timeout)

    def wait_listening(self, timeout):
        """Returns self once self.proc accepts TCP connections on self.port."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("server exited with code %d: %s" %
                                   (self.proc.returncode, self.read_log()))
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return self
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("server did not start: " + self.read_log())

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def stop(self, sig=signal.SIGTERM, timeout=30):
        """Graceful stop; returns the exit code (kills on timeout)."""
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        code = self.proc.returncode
        self.proc = None
        return code

    def cleanup(self):
        self.stop()
        if self.own_tmp:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def client(self, **kw):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def raw(self):
        return RawClient(self.port)


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if isinstance(a, str):
            a = a.encode()
        elif isinstance(a, int):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class RawClient:
    """A socket that sends raw bytes and reads back one complete RESP2/RESP3 reply, as the
    exact bytes received."""

    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def call(self, *args):
        self.send(encode(*args))
        return self.reply()

    def _fill(self):
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        i = self.buf.index(b"\r\n")
        line, self.buf = self.buf[:i + 2], self.buf[i + 2:]
        return line

    def _take(self, n):
        while len(self.buf) < n:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def reply(self):
        line = self._line()
        t = line[:1]
        if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return line
        if t in (b"$", b"=", b"!"):
            n = int(line[1:-2])
            return line if n < 0 else line + self._take(n + 2)
        if t in (b"*", b"~", b">", b"%", b"|"):
            n = int(line[1:-2])
            if n < 0:
                return line
            items = n * 2 if t in (b"%", b"|") else n
            return line + b"".join(self.reply() for _ in range(items))
        raise ValueError("bad reply line %r" % line)

    def closed_by_server(self, timeout=5):
        """True if the server closes the connection (after any pending bytes)."""
        self.sock.settimeout(timeout)
        try:
            while True:
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    return True
                self.buf += chunk
        except (ConnectionResetError, BrokenPipeError):
            return True
        except socket.timeout:
            return False
