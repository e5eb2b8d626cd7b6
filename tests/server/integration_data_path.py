"""Integration tests of larder-server's value path: big values byte for byte, every sendfile
mode, cold values streamed from their files, GETs and SETs served on the io thread, pipelines.
Run with integration_test (which imports it), or alone:
LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v integration_data_path"""
import os
import re
import select
import threading
import unittest

import redis

from server_harness import ServerProcess, SharedServerCase, drop_page_cache, encode, wait_for


class DataPathTest(SharedServerCase):
    """Values through GET, MGET, SET and pipelines on one shared server, checked byte for byte."""

    def test_big_values_exact(self):
        for mib in (2, 16, 80):
            data = os.urandom(1 << 20) * mib
            data = data[:-3] + b"end"
            self.assertTrue(self.r.set("big:%d" % mib, data))
            self.assertEqual(self.r.strlen("big:%d" % mib), len(data))
            got = self.r.get("big:%d" % mib)
            self.assertEqual(len(got), len(data))
            self.assertTrue(got == data, "value of %d MiB differs" % mib)
            self.r.delete("big:%d" % mib)

    def test_every_sendfile_mode_sends_exact_bytes(self):
        values = {"sf:%d" % i: os.urandom(n) for i, n in enumerate((300 << 10, 4 << 20, 9 << 20))}
        for k, v in values.items():
            self.r.set(k, v)
        self.r.save()  # in their blob files now: GET may send them from there
        try:
            for mode in ("remote", "always", "never"):
                self.assertTrue(self.r.config_set("sendfile", mode))
                self.assertEqual(self.r.config_get("sendfile"), {"sendfile": mode})
                for k, v in values.items():
                    self.assertTrue(self.r.get(k) == v, "%s, sendfile %s" % (k, mode))
                self.assertTrue(self.r.mget(list(values)) == list(values.values()), mode)
            with self.assertRaises(redis.ResponseError) as bad:
                self.r.config_set("sendfile", "sometimes")
            self.assertIn("sendfile", str(bad.exception))
            self.assertEqual(self.r.config_get("sendfile"), {"sendfile": "never"})
        finally:
            self.r.config_set("sendfile", "remote")
            self.r.delete(*values)

    def test_cold_values_stream_exact_bytes(self):
        """A GET or MGET of a value the page cache does not hold sends it a piece (256 KiB) at
        a time while it is read, the last piece after the whole value passed its checksum (INFO
        gets_streamed counts values larger than one piece). Sizes around the piece, every
        sendfile mode, RESP2 and RESP3, alone, pipelined and in MGET: the exact bytes."""
        c = self.c
        piece = 256 << 10
        sizes = (piece - 1, piece, piece + 1, 1 << 20, (3 << 20) + 5)
        values = {"cold:%d" % n: os.urandom(n) for n in sizes}
        over_one_piece = sum(1 for n in sizes if n > piece)
        for k, v in values.items():
            self.r.set(k, v)

        def make_cold():
            # Each value anew: the kernel's readahead for one read may cache its neighbours.
            c("SAVE")
            self.assertEqual(self.raw("MEMORY", "PURGE"), b"+OK\r\n")
            drop_page_cache(os.path.join(self.srv.tmp, "data", "values"))

        def streamed():
            return int(c("INFO", "stats")["gets_streamed"])
        try:
            for mode in ("remote", "always", "never"):
                c("CONFIG", "SET", "sendfile", mode)
                before = streamed()
                for k, v in values.items():
                    make_cold()
                    self.assertTrue(self.r.get(k) == v, "%s, sendfile %s" % (k, mode))
                self.assertEqual(streamed(), before + over_one_piece, mode)
            make_cold()
            p = self.r.pipeline(transaction=False)
            for k in values:
                p.get(k)
            self.assertTrue(p.execute() == list(values.values()), "pipelined")
            make_cold()
            self.assertTrue(self.r.mget(list(values)) == list(values.values()), "MGET")
            before = streamed()
            rc = self.srv.raw()
            try:
                self.assertTrue(rc.call("HELLO", "3").startswith(b"%"))
                for k, v in values.items():
                    make_cold()
                    self.assertTrue(rc.call("GET", k) == b"$%d\r\n%s\r\n" % (len(v), v), k)
            finally:
                rc.close()
            self.assertEqual(streamed(), before + over_one_piece, "RESP3")
        finally:
            c("CONFIG", "SET", "sendfile", "remote")
            c("DEL", *values)

    def test_gets_of_values_in_memory_run_on_the_io_thread(self):
        """A GET whose value is in memory and at most inline-get-max-bytes runs on the io thread
        (INFO gets_on_io_thread); one over it, one whose value must come from the disk, and
        every GET with the option 0 run on engine threads. The bytes are the same either way."""
        c = self.c
        small, big = os.urandom(1 << 20), os.urandom(3 << 20)
        c("SET", "io:small", small)
        c("SET", "io:big", big)

        def on_io_thread():
            return int(c("INFO", "stats")["gets_on_io_thread"])
        try:
            self.assertEqual(c("CONFIG", "SET", "inline-get-max-bytes", "2mb"), b"OK")
            for mode in ("remote", "always", "never"):
                c("CONFIG", "SET", "sendfile", mode)
                before = on_io_thread()
                self.assertTrue(c("GET", "io:small") == small, mode)
                self.assertEqual(on_io_thread(), before + 1, mode)
                self.assertTrue(c("GET", "io:big") == big, mode)
                self.assertEqual(on_io_thread(), before + 1, "3 MiB over 2mb: " + mode)
            # Written out, unmapped and dropped from the page cache: the next read is the disk's.
            c("SAVE")
            self.assertEqual(self.raw("MEMORY", "PURGE"), b"+OK\r\n")
            drop_page_cache(os.path.join(self.srv.tmp, "data", "values"))
            before = on_io_thread()
            self.assertTrue(c("GET", "io:small") == small)
            self.assertEqual(on_io_thread(), before, "a value on disk was read on the io thread")
            self.assertTrue(c("GET", "io:small") == small)
            self.assertEqual(on_io_thread(), before + 1, "read once, it is in memory")
            c("CONFIG", "SET", "inline-get-max-bytes", "0")
            self.assertTrue(c("GET", "io:small") == small)
            self.assertEqual(on_io_thread(), before + 1, "inline-get-max-bytes 0")
        finally:
            c("CONFIG", "SET", "inline-get-max-bytes", "16mb")
            c("CONFIG", "SET", "sendfile", "remote")
            c("DEL", "io:small", "io:big")

    def test_sets_that_stay_in_memory_run_on_the_io_thread(self):
        """A plain SET whose write stays in memory (WAL off, room in the write-behind and the
        budget) runs on the io thread (INFO sets_on_io_thread); a SET with options runs on the
        engine threads. The value reads back the same either way."""
        c = self.c

        def on_io_thread():
            return int(c("INFO", "stats")["sets_on_io_thread"])
        value = os.urandom(1 << 20)
        try:
            before = on_io_thread()
            self.assertTrue(c("SET", "ioset:a", value))
            self.assertEqual(on_io_thread(), before + 1)
            self.assertTrue(c("SET", "ioset:a", b"x" * 100))
            self.assertEqual(on_io_thread(), before + 2, "a small value (the index's memtable)")
            self.assertTrue(c("SET", "ioset:b", value, "EX", "100"))
            self.assertTrue(c("SET", "ioset:c", value, "NX"))
            self.assertEqual(on_io_thread(), before + 2, "SETs with options")
            self.assertTrue(c("SET", "ioset:a", value))
            self.assertTrue(c("GET", "ioset:a") == value)
            self.assertTrue(c("GET", "ioset:b") == value)
        finally:
            c("DEL", "ioset:a", "ioset:b", "ioset:c")

    def test_native_client_bytes(self):
        """LMCache's native RESP client: exact +OK, :1/:0 and $<N> replies."""
        rc = self.srv.raw()
        value = os.urandom(4 << 20)
        rc.send(b"*3\r\n$3\r\nSET\r\n$5\r\nnat:1\r\n$%d\r\n" % len(value) + value + b"\r\n")
        self.assertEqual(rc.take(5), b"+OK\r\n")
        rc.send(b"*2\r\n$6\r\nEXISTS\r\n$5\r\nnat:1\r\n")
        self.assertEqual(rc.take(4), b":1\r\n")
        rc.send(b"*2\r\n$3\r\nGET\r\n$5\r\nnat:1\r\n")
        self.assertEqual(rc._line(), b"$%d\r\n" % len(value))
        self.assertEqual(rc.take(len(value) + 2), value + b"\r\n")
        rc.send(b"*2\r\n$3\r\nDEL\r\n$5\r\nnat:1\r\n")
        self.assertEqual(rc.take(4), b":1\r\n")
        rc.send(b"*2\r\n$3\r\nGET\r\n$5\r\nnat:1\r\n")
        self.assertEqual(rc._line(), b"$-1\r\n")
        rc.close()

    def test_pipeline_1000(self):
        p = self.r.pipeline(transaction=False)
        for i in range(500):
            p.set("pl:%d" % i, "v%d" % i)
            p.get("pl:%d" % i)
        out = p.execute()
        self.assertEqual(len(out), 1000)
        for i in range(500):
            self.assertTrue(out[2 * i])
            self.assertEqual(out[2 * i + 1], b"v%d" % i)
        rc = self.srv.raw()  # one write, replies in order
        rc.send(b"".join(encode("INCR", "plc") for _ in range(1000)))
        for i in range(1, 1001):
            self.assertEqual(rc.reply(), b":%d\r\n" % i)
        rc.close()


class MSetTest(unittest.TestCase):
    """MSET writes its values before it takes the exclusive server lock, and only their index
    records under it: other clients' commands go on meanwhile, and still see all of an MSET or
    none of it. The server syncs each value (wal-sync), so an MSET's writes take long enough to
    be caught running."""

    @classmethod
    def setUpClass(cls):
        cls.srv = ServerProcess(["--unixsocket", "", "--wal", "yes", "--wal-sync", "yes"]).start()

    @classmethod
    def tearDownClass(cls):
        cls.srv.cleanup()

    def client(self):
        c = self.srv.raw()
        self.addCleanup(c.close)
        return c

    def test_gets_are_answered_while_an_mset_writes_its_values(self):
        # The server's own times (INFO commandstats): a GET's include any wait for the lock. An
        # MSET holding the lock while it writes would hold the first GET nearly as long as it
        # runs; one that holds it only for its index records keeps every GET short.
        writer, reader, admin = self.client(), self.client(), self.client()
        self.assertEqual(reader.call("SET", "ms:other", "x"), b"+OK\r\n")
        writer_id = writer.call("CLIENT", "ID")[1:-2].decode()
        self.assertEqual(admin.call("CONFIG", "RESETSTAT"), b"+OK\r\n")
        value = b"v" * (32 << 20)
        writer.send(encode("MSET", "ms:a", value, "ms:b", value, "ms:c", value))
        wait_for(lambda: " cmd=mset " in admin.call("CLIENT", "LIST", "ID", writer_id).decode(),
                 interval=0.001)
        gets = 0
        while not select.select([writer.sock], [], [], 0)[0]:
            self.assertEqual(reader.call("GET", "ms:other"), b"$1\r\nx\r\n")
            gets += 1
        self.assertEqual(writer.reply(), b"+OK\r\n")
        stats = admin.call("INFO", "commandstats").decode()

        def usec(command):
            return int(re.search(r"cmdstat_%s:calls=\d+,usec=(\d+)" % command, stats).group(1))

        self.assertGreater(gets, 0)
        self.assertLess(usec("get"), usec("mset") / 2,
                        "%d GETs waited for the MSET:\n%s" % (gets, stats))
        self.assertEqual(reader.call("STRLEN", "ms:c"), b":%d\r\n" % len(value))

    def test_readers_see_all_of_an_mset_or_none(self):
        keys = ["ms:x", "ms:y", "ms:z"]
        done = threading.Event()
        failures = []

        def write():
            w = self.srv.raw()
            try:
                for version in range(12):
                    value = (b"%04d" % version) * (1 << 18)  # 1 MiB
                    args = [a for k in keys for a in (k, value)]
                    if w.call("MSET", *args) != b"+OK\r\n":
                        failures.append("MSET failed")
            finally:
                w.close()
                done.set()

        r = redis.Redis(port=self.srv.port)
        self.addCleanup(r.close)
        r.mset({k: b"init" for k in keys})
        thread = threading.Thread(target=write)
        thread.start()
        reads = 0
        while not done.is_set() or reads == 0:
            got = r.mget(keys)
            reads += 1
            versions = {v[:4] for v in got}
            self.assertEqual(len(versions), 1, "an MGET saw part of an MSET: %r" % versions)
        thread.join()
        self.assertEqual(failures, [])
        self.assertEqual({v[:4] for v in r.mget(keys)}, {b"0011"})


if __name__ == "__main__":
    unittest.main()
