"""TLS on the client port (tls-port and the other tls-* options of redis.conf): redis-py with
ssl=True, LMCache's rediss:// flow (redis.asyncio from a URL), redis-cli --tls; 16 MiB values
byte-exact, from memory and from the value files; the refusals (a plain-text client on the TLS
port, a client without a certificate or with one from another CA, a TLS version turned off),
each beside Redis 7 with the same options; CONFIG SET reloading the certificate; bad TLS
settings stopping the start with a message naming the option and file. The certificates are
made for the run (tls_certs.py)."""
import asyncio
import os
import shutil
import socket
import ssl
import subprocess
import unittest

import redis
import redis.asyncio

from server_harness import MiB, RedisProcess, ServerProcess, free_port
from tls_certs import TestPki

PKI = None  # the run's certificates (setUpModule)


def setUpModule():
    global PKI
    PKI = TestPki()


def tearDownModule():
    PKI.cleanup()


def path(name):
    return PKI.path(name)


def tls_options(port, auth_clients="yes", extra=()):
    """The same tls-* options for larder-server and redis-server."""
    return PKI.server_options(port, auth_clients) + list(extra)


def tls_client(port, cert="client", **kw):
    """redis-py over TLS, checking the server against the run's CA."""
    certs = {} if cert is None else {"ssl_certfile": path(f"{cert}.crt"),
                                     "ssl_keyfile": path(f"{cert}.key")}
    return redis.Redis(host="127.0.0.1", port=port, ssl=True, ssl_ca_certs=path("ca.crt"),
                       ssl_cert_reqs="required", socket_timeout=30, **certs, **kw)


def client_context(cert="client"):
    """Python's TLS client context: the server checked against the run's CA (not its host
    name), presenting certificate `cert` (None: none)."""
    ctx = ssl.create_default_context(cafile=path("ca.crt"))
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(path(f"{cert}.crt"), path(f"{cert}.key"))
    return ctx


def handshake(port, cert="client", max_version=None):
    """One TLS handshake and PING with Python's ssl module: the reply's first bytes, or None if
    the handshake or the read failed (with TLS 1.3 a refused client certificate may show only
    as the connection closing after the handshake)."""
    ctx = client_context(cert)
    if max_version:
        ctx.maximum_version = max_version
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                s.sendall(b"PING\r\n")
                return s.recv(64)
    except (ssl.SSLError, OSError):
        return None


def plain_text_reply(port):
    """What a plain-text client reads after sending PING to the port: b'' when the server
    closes without answering in plain text."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"*1\r\n$4\r\nPING\r\n")
        out = b""
        try:
            while True:
                chunk = s.recv(4096)
                if not chunk:
                    break
                out += chunk
        except ConnectionResetError:
            pass
        return out


class TlsServer:
    """larder-server with a plain port and a TLS port at once; Redis 7 beside it with the same
    tls-* options (TLS only)."""

    def __init__(self, auth_clients="yes", extra=()):
        self.tls_port = free_port()
        self.larder = ServerProcess(tls_options(self.tls_port, auth_clients, extra))
        self.redis = RedisProcess(["--port", "0", *tls_options(0, auth_clients, extra)])
        # Redis listens on its TLS port only; the harness waits on `port`.
        self.redis.args[self.redis.args.index("--tls-port") + 1] = str(self.redis.port)

    def __enter__(self):
        self.larder.start()
        self.redis.start()
        return self

    def __exit__(self, *exc):
        self.larder.cleanup()
        self.redis.cleanup()

    def ports(self):
        """(name, TLS port) of both servers."""
        return [("larder", self.tls_port), ("redis", self.redis.port)]


class TlsValuesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.servers = TlsServer().__enter__()
        cls.port = cls.servers.tls_port

    @classmethod
    def tearDownClass(cls):
        cls.servers.__exit__()

    def test_16_mib_values_byte_exact_from_memory_and_from_files(self):
        c = tls_client(self.port)
        plain = self.servers.larder.client()
        value = os.urandom(16 * MiB)
        self.assertTrue(c.set("big", value))
        # `sendfile never`: the value comes into memory; `always`: it is queued as a file
        # range, which a TLS connection reads back with pread into its staging buffer.
        for mode in ("never", "always"):
            plain.config_set("sendfile", mode)
            self.assertEqual(c.get("big"), value, mode)
        self.assertEqual(plain.get("big"), value)  # the same bytes on the plain port
        plain.config_set("sendfile", "remote")

    def test_pipelined_replies_of_every_size_in_order(self):
        c = tls_client(self.port)
        values = {f"k{i}": os.urandom(size) for i, size in
                  enumerate([0, 1, 100, 16 * 1024, 300 * 1024, 3 * MiB, 5, 9 * MiB])}
        for k, v in values.items():
            c.set(k, v)
        p = c.pipeline(transaction=False)
        for k in values:
            p.get(k)
        p.ping()
        p.mget(list(values))
        out = p.execute()
        self.assertEqual(out[:len(values)], list(values.values()))
        self.assertTrue(out[len(values)])
        self.assertEqual(out[-1], list(values.values()))

    def test_pubsub_messages_over_tls(self):
        sub = tls_client(self.port).pubsub()
        sub.subscribe("ch")
        self.assertEqual(sub.get_message(timeout=5)["type"], "subscribe")
        self.servers.larder.client().publish("ch", b"x" * 100000)
        msg = sub.get_message(timeout=5)
        self.assertEqual(msg["data"], b"x" * 100000)
        sub.close()

    def test_lmcache_rediss_url_flow(self):
        """LMCache's RedisConnector: redis.asyncio from a rediss:// URL, which carries no
        client certificate; the server's CA is trusted through SSL_CERT_FILE. So the server
        runs with tls-auth-clients no (docs/operations.md says so)."""
        with TlsServer(auth_clients="no") as servers:
            url = f"rediss://127.0.0.1:{servers.tls_port}/0"
            key = "meta-llama/Llama-3.1-8B@1@0@5f3a@bfloat16"
            payload, metadata = os.urandom(6 * MiB), os.urandom(28)

            async def flow():
                pool = redis.asyncio.ConnectionPool.from_url(url, max_connections=150)
                r = redis.asyncio.Redis(connection_pool=pool)
                await r.set(key + "kv_bytes", payload)
                await r.set(key + "metadata", metadata)
                exists = await r.exists(key + "metadata")
                got = (await r.get(key + "metadata"), await r.get(key + "kv_bytes"))
                await pool.disconnect()
                return exists, got

            old = os.environ.get("SSL_CERT_FILE")
            os.environ["SSL_CERT_FILE"] = path("ca.crt")
            try:
                exists, got = asyncio.run(flow())
            finally:
                if old is None:
                    del os.environ["SSL_CERT_FILE"]
                else:
                    os.environ["SSL_CERT_FILE"] = old
            self.assertEqual(exists, 1)
            self.assertEqual(got, (metadata, payload))

    def test_redis_cli_tls(self):
        value = os.urandom(3 * MiB)
        src = path("value.bin")
        with open(src, "wb") as f:
            f.write(value)
        cli = ["redis-cli", "-p", str(self.port)] + PKI.client_options()
        with open(src, "rb") as f:
            out = subprocess.run(cli + ["-x", "SET", "cli"], stdin=f, capture_output=True,
                                 timeout=60)
        self.assertEqual(out.stdout.strip(), b"OK", out.stderr)
        out = subprocess.run(cli + ["GET", "cli"], capture_output=True, timeout=60)
        self.assertEqual(out.stdout, value + b"\n")  # redis-cli ends raw output with a newline


class TlsRefusalTest(unittest.TestCase):
    """Each refusal beside Redis 7 with the same options: both close the connection."""

    def test_plain_text_client_on_the_tls_port_is_refused(self):
        with TlsServer() as servers:
            for name, port in servers.ports():
                reply = plain_text_reply(port)
                self.assertNotIn(b"PONG", reply, name)
                self.assertFalse(reply.startswith(b"-"), name)  # no plain-text RESP at all
            self.assertEqual(servers.larder.client().ping(), True)  # the plain port still works
            stats = servers.larder.client().info("stats")
            self.assertEqual(stats["tls_handshake_failures"], 1)

    def test_client_without_a_certificate_is_refused_when_auth_clients_is_yes(self):
        with TlsServer(auth_clients="yes") as servers:
            for name, port in servers.ports():
                self.assertIn(handshake(port, cert=None), (None, b""), name)
                self.assertIn(handshake(port, cert="stranger"), (None, b""), name)
                self.assertEqual(handshake(port), b"+PONG\r\n", name)
                with self.assertRaises(redis.ConnectionError, msg=name):
                    tls_client(port, cert=None).ping()

    def test_optional_client_certificates(self):
        with TlsServer(auth_clients="optional") as servers:
            for name, port in servers.ports():
                self.assertEqual(handshake(port, cert=None), b"+PONG\r\n", name)
                self.assertEqual(handshake(port), b"+PONG\r\n", name)
                self.assertIn(handshake(port, cert="stranger"), (None, b""), name)

    def test_a_tls_version_turned_off_is_refused(self):
        with TlsServer(extra=("--tls-protocols", "TLSv1.3")) as servers:
            for name, port in servers.ports():
                self.assertIsNone(handshake(port, max_version=ssl.TLSVersion.TLSv1_2), name)
                self.assertEqual(handshake(port), b"+PONG\r\n", name)


def how_the_stream_ends(port, request, after=None):
    """Sends `request` over TLS, reads its one-line reply, calls `after(client id)` (which makes
    the server close the connection) and reads on: "close_notify" if the server ended the TLS
    session before closing the socket, "bare close" if the socket just closed (with TLS a
    client cannot then tell the end from a cut), or what it read instead."""
    ctx = client_context()
    ctx.options &= ~ssl.OP_IGNORE_UNEXPECTED_EOF  # Python's default takes a cut for an end
    with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
        with ctx.wrap_socket(raw, suppress_ragged_eofs=False) as s:
            s.sendall(b"CLIENT ID\r\n")
            client_id = int(s.recv(64).strip()[1:])
            s.sendall(request)
            reply = b""
            while not reply.endswith(b"\r\n"):
                reply += s.recv(64)
            if after:
                after(client_id)
            try:
                rest = s.recv(64)
            except ssl.SSLError as e:
                if e.reason == "UNEXPECTED_EOF_WHILE_READING":
                    return "bare close"
                raise
            except ConnectionResetError:
                return "reset"
            return "close_notify" if rest == b"" else rest


class TlsCloseTest(unittest.TestCase):
    """A server that closes a working TLS connection first sends TLS's close_notify, as Redis 7
    does, so the client reads a clean end of stream, not a truncation."""

    def test_quit_and_client_kill_end_the_session_cleanly(self):
        with TlsServer() as servers:
            for name, port in servers.ports():
                admin = tls_client(port)
                self.addCleanup(admin.close)
                self.assertEqual(how_the_stream_ends(port, b"QUIT\r\n"), "close_notify", name)
                killed = how_the_stream_ends(
                    port, b"PING\r\n",
                    after=lambda cid: admin.execute_command("CLIENT", "KILL", "ID", cid))
                self.assertEqual(killed, "close_notify", name)
                self.assertTrue(admin.ping(), name)  # the server goes on


def ping_over_tls(port, ctx, session=None):
    """One handshake and PING with `ctx`: (the reply, the session, whether it was resumed), or
    None if the handshake failed."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
            with ctx.wrap_socket(raw, session=session) as s:
                s.sendall(b"PING\r\n")
                reply = s.recv(64)  # TLSv1.3 session tickets come with it
                return reply, s.session, s.session_reused
    except (ssl.SSLError, OSError):
        return None


def ping_twice(test, port, ctx):
    """ping_over_tls twice, the second offering the first's session: the second's result."""
    first = ping_over_tls(port, ctx)
    test.assertIsNotNone(first, "the first handshake failed")
    again = ping_over_tls(port, ctx, session=first[1])
    test.assertIsNotNone(again, "the second handshake failed")
    return again


class TlsOptionsTest(unittest.TestCase):
    """tls-key-file-pass, tls-dh-params-file and tls-session-caching, beside Redis 7."""

    def test_an_encrypted_key_opens_with_its_passphrase(self):
        extra = ("--tls-key-file", path("server-enc.key"), "--tls-key-file-pass", "larder pass")
        with TlsServer(extra=extra) as servers:
            for name, port in servers.ports():
                self.assertEqual(handshake(port), b"+PONG\r\n", name)
            admin = servers.larder.client()
            # Redis's CONFIG GET shows it; SLOWLOG and MONITOR do not (a secret).
            self.assertEqual(admin.config_get("tls-key-file-pass")["tls-key-file-pass"],
                             "larder pass")

    def test_dhe_ciphers_follow_tls_dh_params_file(self):
        dhe = "DHE-RSA-AES256-GCM-SHA384"
        ctx = client_context()
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        ctx.set_ciphers(dhe)
        base = ("--tls-cert-file", path("server-rsa.crt"), "--tls-key-file",
                path("server-rsa.key"), "--tls-protocols", "TLSv1.2", "--tls-ciphers", dhe)
        for extra in ((), ("--tls-dh-params-file", path("dh.pem"))):
            with TlsServer(extra=base + extra) as servers:
                got = {name: ping_over_tls(port, ctx) for name, port in servers.ports()}
                self.assertIsNotNone(got["redis"], extra)
                self.assertIsNotNone(got["larder"], extra)
                self.assertEqual(got["larder"][0], b"+PONG\r\n", extra)

    def test_sessions_resume_as_tls_session_caching_says(self):
        """A client offering its last session resumes it, as with Redis; with caching off it
        gets a full handshake (Redis 7.0.15 then fails the handshake: not compared)."""
        for version in (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            ctx = client_context()
            ctx.maximum_version = version
            with TlsServer() as servers:
                for name, port in servers.ports():
                    again = ping_twice(self, port, ctx)
                    self.assertEqual(again[0], b"+PONG\r\n", (name, version))
                    self.assertTrue(again[2], (name, version))  # resumed
                admin = servers.larder.client()
                admin.config_set("tls-session-caching", "no")
                port = servers.tls_port
                again = ping_twice(self, port, ctx)
                self.assertEqual(again[0], b"+PONG\r\n", version)
                self.assertFalse(again[2], version)  # a full handshake
                admin.config_set("tls-session-caching", "yes")
                again = ping_twice(self, port, ctx)
                self.assertTrue(again[2], version)


class TlsConfigTest(unittest.TestCase):
    def test_config_set_reloads_the_certificate_for_new_connections(self):
        with TlsServer() as servers:
            port, admin = servers.tls_port, servers.larder.client()
            before = tls_client(port)
            self.assertTrue(before.set("k", b"v"))

            def peer_cn():
                with socket.create_connection(("127.0.0.1", port), timeout=10) as raw:
                    with client_context().wrap_socket(raw) as s:
                        return dict(x[0] for x in s.getpeercert()["subject"])["commonName"]

            self.assertEqual(peer_cn(), "server")
            # A certificate and its key change together, in one CONFIG SET (Redis 7's form);
            # a pair that does not match is refused and changes nothing.
            with self.assertRaisesRegex(redis.ResponseError, "key values mismatch"):
                admin.execute_command("CONFIG", "SET", "tls-cert-file", path("server2.crt"),
                                      "tls-key-file", path("client.key"))
            self.assertEqual(admin.config_get("tls-key-file")["tls-key-file"], path("server.key"))
            self.assertEqual(peer_cn(), "server")
            admin.execute_command("CONFIG", "SET", "tls-cert-file", path("server2.crt"),
                                  "tls-key-file", path("server2.key"))
            self.assertEqual(peer_cn(), "server2")
            self.assertEqual(before.get("k"), b"v")  # an open connection keeps its session
            with self.assertRaisesRegex(redis.ResponseError,
                                        "tls-cert-file '/nonexistent.crt': No such file"):
                admin.config_set("tls-cert-file", "/nonexistent.crt")
            self.assertEqual(admin.config_get("tls-cert-file")["tls-cert-file"],
                             path("server2.crt"))
            self.assertEqual(peer_cn(), "server2")
            # Rotated in place (new files under the same names): the same CONFIG SET reads them
            # again, as Redis does.
            rotated = {ext: os.path.join(os.path.dirname(path("server.crt")), "rotated." + ext)
                       for ext in ("crt", "key")}
            for ext in rotated:
                shutil.copyfile(path("server2." + ext), rotated[ext])
            admin.execute_command("CONFIG", "SET", "tls-cert-file", rotated["crt"],
                                  "tls-key-file", rotated["key"])
            self.assertEqual(peer_cn(), "server2")
            for ext in rotated:
                shutil.copyfile(path("server." + ext), rotated[ext])
            admin.execute_command("CONFIG", "SET", "tls-cert-file", rotated["crt"],
                                  "tls-key-file", rotated["key"])
            self.assertEqual(peer_cn(), "server")

    def test_bad_tls_settings_stop_the_start_naming_the_option(self):
        cases = [
            ([], "tls-port {port} needs tls-cert-file and tls-key-file"),
            (["--tls-cert-file", "/nonexistent.crt", "--tls-key-file", path("server.key")],
             "tls-cert-file '/nonexistent.crt': No such file or directory"),
            (["--tls-cert-file", path("server.crt"), "--tls-key-file", path("client.key")],
             f"tls-key-file '{path('client.key')}': key values mismatch"),
            (["--tls-cert-file", path("server.crt"), "--tls-key-file", path("server.key")],
             "tls-auth-clients yes needs tls-ca-cert-file or tls-ca-cert-dir"),
            (["--tls-cert-file", path("server.crt"), "--tls-key-file", path("server.key"),
              "--tls-auth-clients", "no", "--tls-ciphersuites", "NOT_A_SUITE"],
             "tls-ciphersuites 'NOT_A_SUITE': no cipher match"),
            (["--tls-cert-file", path("server.crt"), "--tls-key-file", path("server-enc.key"),
              "--tls-auth-clients", "no", "--tls-key-file-pass", "wrong"],
             f"tls-key-file '{path('server-enc.key')}': bad decrypt"),
            (["--tls-cert-file", path("server.crt"), "--tls-key-file", path("server-enc.key"),
              "--tls-auth-clients", "no"],
             f"tls-key-file '{path('server-enc.key')}': bad decrypt"),
            (["--tls-cert-file", path("server.crt"), "--tls-key-file", path("server.key"),
              "--tls-auth-clients", "no", "--tls-dh-params-file", path("ca.crt")],
             f"tls-dh-params-file '{path('ca.crt')}': no PEM Diffie-Hellman parameters in it"),
        ]
        for args, message in cases:
            port = free_port()
            with ServerProcess(["--tls-port", str(port), *args]) as srv:
                proc = subprocess.run(srv.command_line(), capture_output=True, timeout=60)
            self.assertEqual(proc.returncode, 1, args)
            self.assertIn(message.format(port=port), proc.stderr.decode(), args)
        with ServerProcess(["--tls-protocols", "TLSv1.1"]) as srv:
            out = subprocess.run(srv.command_line(), capture_output=True, timeout=60)
        self.assertIn("option 'tls-protocols': 'TLSv1.1' is not TLSv1.2 or TLSv1.3",
                      out.stderr.decode())

    def test_tls_only(self):
        port = free_port()
        with ServerProcess(["--port", "0", *tls_options(port)]) as srv:
            srv.port = port  # the harness waits for a TCP accept on it
            srv.start()
            c = tls_client(port)
            self.assertTrue(c.set("k", b"v" * 100))
            self.assertEqual(c.get("k"), b"v" * 100)


if __name__ == "__main__":
    unittest.main()
