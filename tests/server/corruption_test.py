"""Corruption through larder-server: random bytes are flipped in the blob files (values), the
SST files of the index, and the MANIFEST of a stopped server's data directory. Then, for each
kind:

- `larder-admin verify` on a copy of the directory reports it (exit 1, naming the damaged
  file when the directory cannot be opened at all);
- the server either refuses to start with a message naming a corrupted file, or starts and
  answers every GET with the exact bytes written or a miss, never other bytes;
- INFO `corruptions` counts every key that went missing from a damaged blob file, and verify
  named each of those keys. A generation whose index SST is damaged is dropped unread (Debian's
  librocksdb aborts on a malformed block): it counts once, and verify names the file.
- A MANIFEST damaged before its last record makes the server refuse to start, naming it; one
  whose last record is cut short is the tail of a write torn by a crash to RocksDB and to us:
  the edit in it is dropped (its keys forgotten, not counted) and verify reports it.

Run: LARDER_SERVER=... LARDER_ADMIN=... /usr/bin/python3 -m unittest -v corruption_test
LARDER_CORRUPT_SEED fixes the positions of the flipped bytes.

StreamedGetCorruptionTest damages a large value under a running server: a GET of it from the disk
sends its first pieces while it reads the rest, so the mismatch is found after bytes left; the
client must never receive the whole reply, nor anything after it (the rest of an EXEC's or an
MGET's reply), only a connection the server closes."""
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

from crash_journal import make_value
from server_harness import ServerProcess, drop_page_cache, encode, info_stat

ADMIN = os.environ.get("LARDER_ADMIN") or os.path.join(
    os.path.dirname(__file__), "..", "..", "build", "bin", "larder-admin")

# Inline values (in the index's SST files) and blob values (>= 16 KiB, in values/*.lbv).
SMALL = {"small:%d" % i: 1000 + 97 * i for i in range(40)}
BIG = {"big:%d" % i: (64 << 10) + 4093 * i for i in range(40)}
KEYS = {**SMALL, **BIG}


def sst_column_family(path):
    """'index' or 'default': the column family named in an SST's properties block."""
    with open(path, "rb") as f:
        data = f.read()
    return "index" if re.search(rb"idx-[0-9a-f]{16}", data) else "default"


def files_of(data, kind):
    """Paths relative to `data`."""
    names = sorted(os.listdir(data))
    if kind == "blob":
        return sorted(os.path.join("values", n) for n in os.listdir(os.path.join(data, "values"))
                      if n.endswith(".lbv"))
    if kind == "index":
        return [n for n in names if n.endswith(".sst")
                and sst_column_family(os.path.join(data, n)) == kind]
    if kind == "manifest":
        return [n for n in names if n.startswith("MANIFEST-")]
    raise ValueError(kind)


def flip_bytes(path, rng, count, start=0):
    """XORs `count` random bytes of the file from `start` on with a non-zero mask; returns the
    offsets."""
    size = os.path.getsize(path)
    offsets = sorted(rng.randrange(start, size) for _ in range(count))
    with open(path, "r+b") as f:
        for off in offsets:
            f.seek(off)
            b = f.read(1)[0]
            f.seek(off)
            f.write(bytes([b ^ rng.randrange(1, 256)]))
    return offsets


def verify(data):
    """larder-admin verify on a copy (opening a store may clean up what it finds)."""
    copy = tempfile.mkdtemp(prefix="larder-verify-")
    try:
        shutil.copytree(data, os.path.join(copy, "data"))
        p = subprocess.run([ADMIN, "--dir", os.path.join(copy, "data"), "verify"],
                           capture_output=True, timeout=120)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    finally:
        shutil.rmtree(copy, ignore_errors=True)


class CorruptionTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.seed = int(os.environ.get("LARDER_CORRUPT_SEED", random.randrange(1 << 30)))
        cls.pristine = tempfile.mkdtemp(prefix="larder-pristine-")
        srv = ServerProcess(["--unixsocket", ""], tmp=cls.pristine).start()
        r = srv.raw()
        try:
            # Two flushes: several SST files per column family.
            for batch in (0, 1):
                for k, size in KEYS.items():
                    if int(k.split(":")[1]) % 2 == batch:
                        assert r.call("SET", k, make_value(k, 1, size)) == b"+OK\r\n"
                assert r.call("SAVE") == b"+OK\r\n"
        finally:
            r.close()
        assert srv.stop() == 0
        cls.report = []

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.pristine, ignore_errors=True)
        print("\n  corruption (seed %d):\n  | files | flipped bytes | server | keys missed | "
              "INFO corruptions | verify |\n  |---|---|---|---|---|---|" % cls.seed, file=sys.stderr)
        for row in cls.report:
            print("  | %s |" % " | ".join(str(x) for x in row), file=sys.stderr)

    def corrupt(self, kind, flips_per_file, round_=0):
        tmp = tempfile.mkdtemp(prefix="larder-corrupt-")
        self.addCleanup(shutil.rmtree, tmp, True)
        data = os.path.join(tmp, "data")
        shutil.copytree(os.path.join(self.pristine, "data"), data)
        files = files_of(data, kind)
        self.assertGreater(len(files), 0, "no %s files in %s" % (kind, os.listdir(data)))
        rng = random.Random("%d-%s-%d" % (self.seed, kind, round_))
        for name in files:
            # A blob file's 4 KiB header is checked at open, so a flip there loses the whole
            # file at once; the flips land in its values, which every read checks.
            flip_bytes(os.path.join(data, name), rng, flips_per_file, 4096 if kind == "blob" else 0)
        return tmp, data, files

    def check(self, kind, flips_per_file, round_=0, sendfile="remote"):
        tmp, data, files = self.corrupt(kind, flips_per_file, round_)
        ctx = "%s round %d, sendfile %s, LARDER_CORRUPT_SEED=%d" % (kind, round_, sendfile,
                                                                    self.seed)
        vrc, vout, verr = verify(data)
        # Every block of SST files and every blob record is checksummed: verify finds the
        # flipped bytes whether or not they touch a value the server would serve.
        self.assertEqual(vrc, 1, "%s: verify: %s %s" % (ctx, vout, verr))

        srv = ServerProcess(["--unixsocket", "", "--sendfile", sendfile], tmp=tmp)
        self.addCleanup(srv.stop)
        try:
            srv.start()
        except RuntimeError as e:
            log = str(e)
            self.assertTrue(any(name in log for name in files),
                            "%s: refused to start without naming a corrupted file: %s" % (ctx, log))
            self.assertIn("the data directory is damaged", log, ctx)
            self.report.append((kind, len(files) * flips_per_file, "refused, names the file",
                                "-", "-", "exit %d" % vrc))
            return
        rc = srv.raw()
        missed = []
        for k, size in KEYS.items():
            reply = rc.call("GET", k)
            if reply == b"$-1\r\n":
                missed.append(k)
                continue
            want = make_value(k, 1, size)
            self.assertEqual(reply, b"$%d\r\n" % size + want + b"\r\n",
                             "%s: wrong bytes served for %s" % (ctx, k))
        info = rc.call("INFO", "larder").decode()
        rc.close()
        corruptions = int(re.search(r"corruptions:(\d+)", info).group(1))
        if kind == "index":
            self.assertEqual(corruptions > 0, len(missed) > 0, "%s: missed %s" % (ctx, missed))
            self.assertTrue(not missed or any(name in vout for name in files),
                            "%s: verify did not name a damaged SST: %s" % (ctx, vout))
        elif kind == "manifest" and "torn by a crash" in vout:
            self.assertEqual(corruptions, 0, ctx)  # the last edit dropped, as after a power cut
        else:
            self.assertEqual(corruptions, len(missed), "%s: missed %s" % (ctx, missed))
            log = srv.read_log()
            for k in missed:
                self.assertIn("'%s'" % k, vout, "%s: verify did not name %s" % (ctx, k))
                if kind == "blob":  # found by the read (damage found at open is reported there)
                    self.assertIn('key "%s" failed verification' % k, log, ctx + ": not logged")
        self.report.append((kind, len(files) * flips_per_file, "started", len(missed),
                            corruptions, "exit %d" % vrc))
        return missed, vrc

    def test_blob_files(self):
        # GET verifies a value before sending it, whether it copies it (to a client on this
        # host) or sends it from its file (sendfile, to other hosts).
        for round_, sendfile in enumerate(("remote", "always")):
            missed, vrc = self.check("blob", 16, round_, sendfile)
            self.assertGreater(len(missed), 0)

    def test_index_sst_files(self):
        # Several rounds: a flip in a data block the server parsed unverified would crash it
        # (Debian's librocksdb asserts on malformed blocks).
        for round_ in range(5):
            self.check("index", 8, round_)

    def test_manifest(self):
        self.check("manifest", 4)


class StreamedGetCorruptionTest(unittest.TestCase):
    PIECE = 256 << 10  # what the server reads and sends at a time
    # The 5-byte last piece waits for the checksum. Over 8 MiB: more than the kernel reads ahead
    # for one POSIX_FADV_WILLNEED (8 MiB on the bench's disk, less on most), so MGET's read of
    # its keys before their turn (Store::Prefetch) cannot cache the value whole.
    SIZE = 40 * PIECE + 5
    FLIPPED = 8 * PIECE + 17  # sent before the whole value is read

    def start_with_damaged(self):
        """A server holding "big" (damaged at FLIPPED on disk) and "other" (intact), neither
        in the page cache; a raw client; the two values."""
        srv = ServerProcess(["--unixsocket", ""]).start()
        self.addCleanup(srv.cleanup)
        rc = srv.raw()
        self.addCleanup(rc.close)
        value, other = os.urandom(self.SIZE), os.urandom(self.SIZE)
        self.assertEqual(rc.call("SET", "big", value), b"+OK\r\n")
        self.assertEqual(rc.call("SET", "other", other), b"+OK\r\n")
        self.assertEqual(rc.call("SAVE"), b"+OK\r\n")
        self.assertEqual(rc.call("MEMORY", "PURGE"), b"+OK\r\n")
        data = os.path.join(srv.tmp, "data")
        damage_value(data, value, self.FLIPPED)
        drop_page_cache(data)
        return srv, rc, value, other

    def check_cut_short(self, got, prefix, value):
        """`got` (all a closed connection received) is `prefix`, the header of `value` and at
        most all of it but the last piece, as damaged."""
        header = prefix + b"$%d\r\n" % self.SIZE
        self.assertTrue(got.startswith(header), got[:40])
        self.assertGreater(len(got), len(header), "nothing was streamed before the check")
        self.assertLessEqual(len(got), len(header) + self.SIZE - 5, "bytes after the failure")
        damaged = bytearray(value)
        damaged[self.FLIPPED] ^= 0xFF
        self.assertTrue(got[len(header):] == bytes(damaged[:len(got) - len(header)]))

    def check_after(self, srv, other, streamed, closed=True):
        """The damage counted and logged once and "big" removed, "other" intact; a connection
        closed mid-value (`closed`) is logged too."""
        self.assertEqual(info_stat(srv, "gets_streamed"), streamed)
        self.assertEqual(info_stat(srv, "corruptions"), 1)
        rc = srv.raw()
        self.addCleanup(rc.close)
        self.assertEqual(rc.call("GET", "big"), b"$-1\r\n")
        self.assertTrue(rc.call("GET", "other") == b"$%d\r\n%s\r\n" % (self.SIZE, other))
        log = srv.read_log()
        self.assertEqual(log.count('the value of key "big" failed verification and was removed'),
                         1, log[-2000:])
        self.assertEqual("closing client" in log, closed, log[-2000:])

    def test_a_value_failing_after_its_first_pieces_closes_the_connection(self):
        srv, rc, value, other = self.start_with_damaged()
        streamed = info_stat(srv, "gets_streamed")
        rc.send(encode("GET", "big") + encode("PING"))
        self.assertTrue(rc.closed_by_server(), "the connection stayed open")
        self.check_cut_short(rc.buf, b"", value)  # and no PONG
        self.check_after(srv, other, streamed + 1)

    def test_an_exec_sends_nothing_after_a_value_that_failed(self):
        # The EXEC goes on to "other", whose bytes must not follow the cut-short "big": the
        # client would read them as the rest of it.
        srv, rc, value, other = self.start_with_damaged()
        streamed = info_stat(srv, "gets_streamed")
        self.assertEqual(rc.call("MULTI"), b"+OK\r\n")
        self.assertEqual(rc.call("GET", "big"), b"+QUEUED\r\n")
        self.assertEqual(rc.call("GET", "other"), b"+QUEUED\r\n")
        rc.send(encode("EXEC"))
        self.assertTrue(rc.closed_by_server(), "the connection stayed open")
        self.check_cut_short(rc.buf, b"*2\r\n", value)
        self.check_after(srv, other, streamed + 1)

    def test_an_mget_sends_nothing_after_a_value_that_failed(self):
        # Nor does it read the keys after it: their replies could never be sent.
        srv, rc, value, other = self.start_with_damaged()
        streamed, hits = info_stat(srv, "gets_streamed"), info_stat(srv, "keyspace_hits")
        rc.send(encode("MGET", "big", "other"))
        if not rc.closed_by_server():
            # MGET starts the reads of all its keys first (Store::Prefetch); where the kernel
            # reads ahead more than SIZE for it (see SIZE) and the disk has read all of "big"
            # before its turn, it is read whole instead of streamed, fails before a byte of it
            # is sent, and is nil, as GET answers it; the reply goes on.
            self.assertTrue(rc.buf == b"*2\r\n$-1\r\n$%d\r\n%s\r\n" % (self.SIZE, other),
                            rc.buf[:40])
            self.check_after(srv, other, streamed, closed=False)
            return
        self.check_cut_short(rc.buf, b"*2\r\n", value)
        self.assertEqual(info_stat(srv, "keyspace_hits"), hits, "read after the abandoned reply")
        self.check_after(srv, other, streamed + 1)


def damage_value(data, value, at):
    """XORs byte `at` of `value` with 0xFF where it lies in the blob files under `data`
    (written through, so the next read from the disk finds it)."""
    for name in files_of(data, "blob"):
        path = os.path.join(data, name)
        with open(path, "rb") as f:
            start = f.read().find(value[:4096])
        if start < 0:
            continue
        fd = os.open(path, os.O_RDWR)
        try:
            b = os.pread(fd, 1, start + at)[0]
            os.pwrite(fd, bytes([b ^ 0xFF]), start + at)
            os.fsync(fd)
        finally:
            os.close(fd)
        return
    raise AssertionError("value not found in the blob files of " + data)


if __name__ == "__main__":
    unittest.main()
