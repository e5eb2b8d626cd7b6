"""Harness for everything that starts a server and talks RESP to it: the tests, the bench smoke
tests and the Python benches (bench/ imports this file; nothing here imports from bench/).

A server process (larder-server, or Debian's redis-server 7 as the reference) runs on a free
loopback port with a temp data directory and its log there; it is always stopped, and the
directory removed, by cleanup(). RawClient speaks raw RESP for byte-exact checks."""
import ctypes
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

SERVER = os.environ.get("LARDER_SERVER") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin", "larder-server")
REDIS_SERVER = (os.environ.get("REDIS_SERVER") or shutil.which("redis-server")
                or "/usr/bin/redis-server")
MiB = 1 << 20


def _die_with_parent():
    """Runs in the child before exec: SIGTERM it if the test process dies (even by SIGKILL,
    e.g. a CTest timeout), so no server outlives its test."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


# Ports free_port() handed out in this process, so two servers of one test never get the same.
_given_ports = set()


def _port_pool():
    """Where free_port() looks: the 16,384 ports just below the kernel's range for automatic
    local ports (ip_local_port_range; 32768-60999 by default). A port the kernel picks with
    bind(0) comes from that range, which every outgoing connection also draws from, so a test's
    own clients could take it before its server binds it; below the range nothing takes a port
    unless it asks for that port. None where the range leaves no room below it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    first = max(1024, low - 16384)
    return range(first, low) if low - first >= 1024 else None


def free_port():
    """A loopback port free at the time of the call, chosen at random outside the range of
    automatic local ports (_port_pool). Only that: the caller's server binds it later, and a
    test running beside this one may take it first (Process.start checks and moves on)."""
    pool = _port_pool()
    for _ in range(100 if pool else 0):
        port = random.choice(pool)
        if port in _given_ports:
            continue
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:  # in use, or held by a closing connection
                continue
        _given_ports.add(port)
        return port
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_inodes(port):
    """The inodes of the TCP sockets (IPv4 and IPv6) listening on `port`, from /proc/net."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)  # the header
                for line in f:
                    fields = line.split()
                    local, state, inode = fields[1], fields[3], fields[9]
                    if state == "0A" and int(local.rsplit(":", 1)[1], 16) == port:  # LISTEN
                        inodes.add(inode)
        except FileNotFoundError:  # no IPv6
            continue
    return inodes


def listens_on(pid, port):
    """Whether process `pid` holds a socket listening on TCP `port`."""
    wanted = {"socket:[%s]" % inode for inode in listening_inodes(port)}
    if not wanted:
        return False
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)) in wanted:
                return True
        except OSError:  # closed meanwhile
            continue
    return False


class PortTaken(Exception):
    """The server could not listen: another process took its port first."""


def encode(*args):
    """One RESP command (an array of bulk strings) from str, bytes or int arguments."""
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += (b"$%d\r\n" % len(a), a, b"\r\n")  # a large value copied once, by the join
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


def keep_big_buffers_on_the_heap():
    """Call once in a process that times replies of 128 KiB or more. With glibc's defaults each
    such receive buffer is mmap()ed and unmapped on free, so every reply costs the client fresh
    page faults (2-4 ms per 256 KiB GET on a 2-core machine, against 0.1-0.2 ms with these
    thresholds, which glibc's own dynamic threshold reaches once a 4 MiB block was freed)."""
    libc = ctypes.CDLL("libc.so.6")
    m_trim_threshold, m_mmap_threshold = -1, -3
    libc.mallopt(m_mmap_threshold, 4 << 20)
    libc.mallopt(m_trim_threshold, 8 << 20)


def wait_for(predicate, timeout=30, interval=0.05):
    """Calls predicate until it returns something true, and returns that; raises AssertionError
    after `timeout` seconds. Tests wait for a condition this way, never for a fixed time, so a
    loaded machine makes them slower, not flaky."""
    deadline = time.monotonic() + timeout
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError("condition not met within %s s" % timeout)
        time.sleep(interval)


def info_stat(server, name):
    """The INFO field `name` of a running server, as an int when it is one."""
    rc = server.raw()
    try:
        reply = rc.call("INFO", "everything")
    finally:
        rc.close()
    for line in reply.split(b"\r\n"):
        key, _, value = line.decode(errors="replace").partition(":")
        if key == name:
            return int(value) if value.lstrip("-").isdigit() else value
    raise KeyError(name)


def drop_page_cache(directory):
    """Drops the page cache of every file under `directory` (POSIX_FADV_DONTNEED), so the next
    read of them is the disk's. Clean pages only: SAVE first. A file a server holds mapped keeps
    its mapped pages (MEMORY PURGE lets them go)."""
    for root, _, files in os.walk(directory):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except FileNotFoundError:  # compacted away since the listing
                continue
            try:
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
            finally:
                os.close(fd)


class Process:
    """One server process on a free loopback port, its temp directory (created unless `tmp` is
    given, and then removed by cleanup()) holding `log_name`. Subclasses say how it is started
    (command_line); `wrapper` is a command prefix (e.g. ["prlimit", "--nofile=256:256"])."""
    log_name = "server.log"

    # A first start whose port another process took moves to a new port, this many times.
    PORT_ATTEMPTS = 5

    def __init__(self, tmp=None, wrapper=()):
        self.own_tmp = tmp is None
        self.tmp = tmp or tempfile.mkdtemp(prefix="larder-it-")
        self.port = free_port()
        self.wrapper = list(wrapper)
        self.proc = None
        self.log = None
        self.log_path = os.path.join(self.tmp, self.log_name)
        self.started = False  # once started, a restart keeps its port (clients know it)

    def command_line(self):
        raise NotImplementedError

    def start(self, timeout=20):
        """Starts the process; returns self once it listens on self.port. free_port() only
        found the port free: if another process (a server of a test running beside this one)
        took it first, a first start moves to a new port where its command line gives
        `--port self.port`, and the log keeps no trace of the attempt."""
        for _ in range(self.PORT_ATTEMPTS):
            log_start = os.path.getsize(self.log_path) if os.path.exists(self.log_path) else 0
            self.log = open(self.log_path, "ab")
            command = self.wrapper + self.command_line()
            self.proc = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                         preexec_fn=_die_with_parent)
            try:
                self.wait_listening(timeout, log_start)
                self.started = True
                return self
            except PortTaken:
                self.stop(signal.SIGKILL)
                if self.started or port_option(command) != str(self.port):
                    raise RuntimeError("port %d is taken: %s" % (self.port, self.read_log()))
                os.truncate(self.log_path, log_start)
                self.port = free_port()
        raise RuntimeError("no free port after %d attempts" % self.PORT_ATTEMPTS)

    def wait_listening(self, timeout, log_start=0):
        """Returns once self.proc listens on self.port (its own socket: a connection could
        reach another process that took the port). Raises PortTaken if it exited because the
        port was in use, RuntimeError if it exited otherwise or did not listen in `timeout`."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                with open(self.log_path, "rb") as f:
                    f.seek(log_start)
                    if b"already in use" in f.read():
                        raise PortTaken()
                raise RuntimeError("server exited with code %d: %s" %
                                   (self.proc.returncode, self.read_log()))
            if listens_on(self.proc.pid, self.port):
                return
            time.sleep(0.05)
        raise RuntimeError("server did not start: " + self.read_log())

    def read_log(self):
        with open(self.log_path, "rb") as f:
            return f.read().decode(errors="replace")

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

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

    # `with ServerProcess(...).start() as srv:` cleans up however the block ends.
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.cleanup()

    def client(self, **kw):
        import redis
        return redis.Redis(host="127.0.0.1", port=self.port, **kw)

    def raw(self):
        return RawClient(self.port)


def preload_wrapper(library, **env):
    """The command prefix that runs a server with `library` LD_PRELOADed and `env` set."""
    prefix = ["env", "LD_PRELOAD=" + library] + ["%s=%s" % kv for kv in env.items()]
    if os.environ.get("LARDER_SANITIZER") == "asan":
        # ASan insists on its runtime coming first in the library list, and a preloaded
        # library comes before it. The shims only forward calls and allocate nothing.
        prefix.append("ASAN_OPTIONS=%s:verify_asan_link_order=0"
                      % os.environ.get("ASAN_OPTIONS", ""))
    return prefix


def port_option(command):
    """The value of the last `--port` in a command line (the one the server takes), or None."""
    at = [i for i, arg in enumerate(command[:-1]) if arg == "--port"]
    return command[at[-1] + 1] if at else None


class ServerProcess(Process):
    """larder-server. `args` are extra --option value pairs (they win over the defaults);
    `conf_text`, if given, is written to tmp/larder.conf and loaded; `limits` are the options
    every test server gets unless it says otherwise (a small disk budget and memtable)."""
    TEST_LIMITS = ("--max-disk-bytes", "256mb", "--memtable-bytes", "64mb")

    def __init__(self, args=(), conf_text=None, tmp=None, wrapper=(), limits=TEST_LIMITS):
        super().__init__(tmp, wrapper)
        self.conf = None
        if conf_text is not None:
            self.conf = os.path.join(self.tmp, "larder.conf")
            with open(self.conf, "w") as f:
                f.write(conf_text)
        self.args = list(args)
        self.limits = list(limits)

    def command_line(self):
        cmd = [SERVER] + ([self.conf] if self.conf else [])
        cmd += ["--port", str(self.port), "--dir", os.path.join(self.tmp, "data")]
        return cmd + self.limits + self.args


class RedisProcess(Process):
    """Debian's redis-server 7, the reference where the behaviour is Redis's: no persistence,
    loopback only; `args` are extra --option value pairs; `binary` overrides REDIS_SERVER."""
    log_name = "redis.log"

    def __init__(self, args=(), tmp=None, wrapper=(), binary=None):
        super().__init__(tmp, wrapper)
        self.args = list(args)
        self.binary = binary or REDIS_SERVER

    def command_line(self):
        if not os.path.exists(self.binary):
            raise RuntimeError(f"redis-server not found at {self.binary}; "
                               "scripts/deps --test installs it (Debian redis-server)")
        return [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                "--appendonly", "no", "--dir", self.tmp] + self.args


class RawClient:
    """A socket that sends raw bytes and reads back one complete RESP2/RESP3 reply, as the
    exact bytes received."""

    def __init__(self, port, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = bytearray()  # received, not yet taken: appended to and cut from the front

    def close(self):
        self.sock.close()

    def send(self, data):
        self.sock.sendall(data)

    def call(self, *args):
        self.send(encode(*args))
        return self.reply()

    def _fill(self):
        # 256 KiB: asked for more, each call's receive buffer is fresh memory to fault in.
        chunk = self.sock.recv(256 << 10)
        if not chunk:
            raise ConnectionError("closed")
        self.buf += chunk

    def _line(self):
        return self._cut(self._line_length())

    def _line_length(self):
        """The length of the next line in `buf`, its CRLF included, once it has arrived."""
        while (i := self.buf.find(b"\r\n")) < 0:
            self._fill()
        return i + 2

    def take(self, n):
        """The next n bytes received, whatever they hold (ConnectionError if closed first)."""
        while len(self.buf) < n:
            self._fill()
        return self._cut(n)

    def _cut(self, n):
        """The first n bytes of `buf`, removed from it. A bytearray appends and drops from its
        front in place: a 64 MiB reply read as a bytes object grown chunk by chunk copied
        itself once per chunk (minutes of the suite)."""
        with memoryview(self.buf) as view:
            data = view[:n].tobytes()
        del self.buf[:n]
        return data

    def reply(self):
        length = self._line_length()
        t = self.buf[:1]
        if t in (b"$", b"=", b"!"):  # the header and the value in one piece, copied once
            n = int(self.buf[1:length - 2])
            return self.take(length if n < 0 else length + n + 2)
        line = self._cut(length)
        if t in (b"+", b"-", b":", b"_", b",", b"#", b"("):
            return line
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


class BesideRedisCase(unittest.TestCase):
    """Tests that compare larder-server with Redis 7: `larder` and `redis` are started once for
    the class (Redis with Larder's one database, so commands naming a database compare too)."""

    @classmethod
    def setUpClass(cls):
        cls.larder = ServerProcess(["--unixsocket", ""]).start()
        cls.addClassCleanup(cls.larder.cleanup)
        cls.redis = RedisProcess(["--databases", "1"]).start()
        cls.addClassCleanup(cls.redis.cleanup)


class SharedServerCase(unittest.TestCase):
    """Tests sharing one larder-server started with SERVER_ARGS: `r` is a redis-py client to it,
    `c(*args)` a command through it, `raw(*args)` one command's raw RESP reply."""

    SERVER_ARGS = ["--unixsocket", ""]

    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess(cls.SERVER_ARGS).start()
        cls.r = cls.srv.client()

    @classmethod
    def tearDownClass(cls):
        cls.r.close()
        cls.srv.cleanup()

    def c(self, *args):
        return self.r.execute_command(*args)

    def raw(self, *args):
        rc = self.srv.raw()
        try:
            return rc.call(*args)
        finally:
            rc.close()
