"""What monitoring tools read, on larder-server beside redis-server 7: INFO's section titles in
Redis's order and the fields tools parse (the *_human twins of byte counts, run_id, the Pub/Sub
counts), and Debian's prometheus-redis-exporter (oliver006/redis_exporter) scraping both servers
after the same traffic, and a Larder cluster node with -is-cluster."""
import subprocess
import unittest
import urllib.request

from cluster_harness import Cluster
from integration_observability import BothServers, stop_when_done
from server_harness import ServerProcess, free_port, info_stat, wait_for


def human_bytes(n):
    """A byte count as Redis's bytesToHuman prints it ("1023B", "2.84M")."""
    if n < 1024:
        return "%dB" % n
    value, unit = n / 1024, 0
    while unit < 4 and value >= 1024:
        value, unit = value / 1024, unit + 1
    return "%dB" % n if value >= 1024 else "%.2f%s" % (value, "KMGTP"[unit])


def info_fields(conn, *sections):
    """An INFO reply as (section titles in order, {field: value})."""
    reply = conn.call("INFO", *sections).decode()
    titles, fields = [], {}
    for line in reply.split("\r\n"):
        if line.startswith("# "):
            titles.append(line[2:])
        elif ":" in line:
            key, _, value = line.partition(":")
            fields[key] = value
    return titles, fields


class InfoLayoutTest(BothServers):
    """What tools parse out of INFO: Redis's section titles in Redis's order (Larder's own
    section last), the *_human twins of byte counts, run_id, and the Pub/Sub counts."""

    def test_sections_are_redis_s_in_redis_s_order(self):
        for args in ([], ["default"], ["everything"], ["all"], ["cpu", "modules", "errorstats"]):
            with self.subTest(args=args):
                larder, redis = (info_fields(c, *args)[0] for c in self.clients(raw=True))
                self.assertEqual(larder, redis + (["Larder"] if "Server" in redis else []))
        self.assertIn("CPU", redis)

    def test_byte_counts_have_their_human_twins_as_in_redis(self):
        for server, conn in zip(self.servers, self.clients(raw=True)):
            fields = info_fields(conn, "memory")[1]
            twins = [k for k in fields if k.endswith("_human") and k[:-6] in fields]
            with self.subTest(server=type(server).__name__):
                for name in twins:
                    self.assertEqual(fields[name], human_bytes(int(fields[name[:-6]])), name)
                self.assertTrue({"used_memory_human", "used_memory_rss_human", "maxmemory_human",
                                 "total_system_memory_human"} <= set(twins), twins)
        larder, redis = (info_fields(c, "memory")[1] for c in self.clients(raw=True))
        self.assertEqual(larder["total_system_memory"], redis["total_system_memory"])
        for n in (0, 1023, 1024, 1536, (1 << 20) - 1, 3 << 30, 5 << 40, 7 << 50, 1 << 60):
            self.assertRegex(human_bytes(n), r"^(\d+B|\d+\.\d\d[KMGTP])$")

    def test_run_id_is_new_at_each_start(self):
        other = ServerProcess(["--unixsocket", ""]).start()
        self.addCleanup(other.cleanup)
        ids = [info_stat(s, "run_id") for s in (self.larder, other, self.redis)]
        for run_id in ids:
            self.assertRegex(run_id, r"^[0-9a-f]{40}$")
        self.assertEqual(len(set(ids)), 3)
        self.assertEqual(info_stat(self.larder, "run_id"), ids[0])

    def test_pubsub_counts_as_redis(self):
        for server in self.servers:
            subscribers = [server.client().pubsub() for _ in range(2)]
            for p in subscribers:
                self.addCleanup(p.close)
                p.subscribe("ch:a", "ch:b")
            subscribers[0].psubscribe("ch:*", "other:*")
            want = {"pubsub_channels": 2, "pubsub_patterns": 2, "pubsubshard_channels": 0}
            wait_for(lambda: {k: info_stat(server, k) for k in want} == want)
            subscribers[1].unsubscribe("ch:b")
            subscribers[0].unsubscribe("ch:b")
            wait_for(lambda: info_stat(server, "pubsub_channels") == 1)


class RedisExporterTest(BothServers):
    """Debian's prometheus-redis-exporter (oliver006/redis_exporter) scraping each server
    after the same traffic: every Redis metric it gives for Larder it gives for Redis, the
    counts that traffic decides are Redis's, and it logs no error."""

    EXPORTER = "prometheus-redis-exporter"
    SAME = ['redis_commands_total{cmd="get"}', 'redis_commands_total{cmd="set"}',
            'redis_commands_failed_calls_total{cmd="get"}', "redis_keyspace_hits_total",
            "redis_keyspace_misses_total", 'redis_db_keys{db="db0"}',
            'redis_db_keys_expiring{db="db0"}', 'redis_key_size{db="db0",key="ex:a"}',
            "redis_connected_clients", "redis_pubsub_channels", "redis_evicted_keys_total",
            "redis_expired_keys_total", "redis_total_system_memory_bytes",
            "redis_total_error_replies", 'redis_exporter_last_scrape_error{err=""}']
    PRESENT = ["redis_memory_used_bytes", "redis_memory_max_bytes", "redis_uptime_in_seconds",
               "redis_net_input_bytes_total", "redis_cpu_user_seconds_total",
               'redis_latency_percentiles_usec{cmd="get",quantile="50"}',
               'redis_commands_duration_seconds_total{cmd="get"}']

    def scrape(self, server, *options):
        """The exporter's samples ({name{labels}: value}) after one scrape of `server`, and
        what it logged."""
        port = free_port()
        proc = subprocess.Popen(
            [self.EXPORTER, "-redis.addr", "redis://127.0.0.1:%d" % server.port,
             "-web.listen-address", "127.0.0.1:%d" % port, "-check-keys", "ex:*",
             "-include-system-metrics", *options],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        stop_when_done(self, proc)

        def page():
            try:
                with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=10) as r:
                    return r.read().decode()
            except OSError:
                return None
        text = wait_for(page)
        proc.kill()
        log = proc.communicate()[0].decode(errors="replace")
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples, log

    def test_both_servers_export_the_same_figures(self):
        results = []
        for server in self.servers:
            c = server.client()
            self.addCleanup(c.close)
            c.flushall()
            c.config_resetstat()
            c.set("ex:a", b"x" * 1000)
            c.set("ex:b", "v", ex=100)
            c.get("ex:a")
            c.get("ex:a")
            c.get("ex:missing")
            c.close()
            results.append(self.scrape(server))
        (larder, larder_log), (redis, redis_log) = results
        for log in (larder_log, redis_log):
            self.assertNotRegex(log, "level=(error|fatal)", log)
        for samples in (larder, redis):
            self.assertEqual(samples.get("redis_up"), 1)
        same = lambda samples: {k: samples.get(k) for k in self.SAME}
        self.assertEqual(same(larder), same(redis))
        self.assertEqual((larder['redis_commands_total{cmd="get"}'],
                          larder["redis_keyspace_misses_total"]), (3, 1))
        for name in self.PRESENT:
            self.assertIn(name, larder)
            self.assertIn(name, redis)
        names = lambda samples: {k.partition("{")[0] for k in samples}
        self.assertEqual(names(larder) - names(redis), set())
        info = next(k for k in larder if k.startswith("redis_instance_info{"))
        self.assertIn('run_id="%s"' % info_stat(self.larder, "run_id"), info)
        self.assertEqual(larder["redis_memory_max_bytes"], info_stat(self.larder, "maxmemory"))



    def test_cluster_mode_reports_the_pushed_topology(self):
        with Cluster(3) as cluster:
            cluster.start()
            cluster.push()
            samples, log = self.scrape(cluster.nodes[0], "-is-cluster")
        self.assertNotRegex(log, "level=(error|fatal)", log)
        want = {"redis_up": 1, "redis_cluster_enabled": 1, "redis_cluster_state": 1,
                "redis_cluster_slots_assigned": 16384, "redis_cluster_slots_ok": 16384,
                "redis_cluster_known_nodes": 3, "redis_cluster_size": 3}
        self.assertEqual({k: samples.get(k) for k in want}, want)


if __name__ == "__main__":
    unittest.main()
