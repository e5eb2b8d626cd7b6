#!/usr/bin/python3
"""Checks of the deployment files: conf/k8s/*.yaml, conf/k8s/cluster/*.yaml (kvrocks-controller
and the DaemonSet's cluster patch), conf/larder.service, docs/deploy.md.

Run: /usr/bin/python3 -m unittest -v test_deploy_files   (from tests/tools; CTest sets
LARDER_SOURCE_DIR to the repo root; without it the root is found relative to this file).
YAML parsing needs Debian's python3-yaml, which loads only under /usr/bin/python3.
"""

import os
import re
import shlex
import shutil
import subprocess
import tempfile
import unittest

try:
    import yaml
except ImportError:  # reported as a skip with the reason, per test
    yaml = None

ROOT = os.environ.get("LARDER_SOURCE_DIR") or os.path.abspath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
K8S_DIR = os.path.join(ROOT, "conf", "k8s")
UNIT = os.path.join(ROOT, "conf", "larder.service")
DEPLOY_MD = os.path.join(ROOT, "docs", "deploy.md")
PING = "redis-cli -p 6379 ping"

NO_YAML = "python3-yaml is not installed (apt-get install -y python3-yaml)"


def load_k8s(directory=K8S_DIR):
    """{kind: [documents]} over every *.yaml / *.yml in `directory` (not its subfolders)."""
    docs = {}
    for name in sorted(os.listdir(directory)):
        if name.endswith((".yaml", ".yml")):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                for doc in yaml.safe_load_all(f):
                    if doc is not None:
                        docs.setdefault(doc["kind"], []).append(doc)
    return docs


def probe_command(probe):
    """An exec probe's command as one shell-like string."""
    return " ".join(probe["exec"]["command"])


def parse_unit(path):
    """systemd unit -> {section: {key: [values]}} (keys may repeat)."""
    sections, current = {}, None
    with open(path, encoding="utf-8") as f:
        for raw in f:
            line = raw.strip()
            if not line or line.startswith(("#", ";")):
                continue
            if line.startswith("[") and line.endswith("]"):
                current = sections.setdefault(line[1:-1], {})
                continue
            key, _, value = line.partition("=")
            current.setdefault(key.strip(), []).append(value.strip())
    return sections


@unittest.skipIf(yaml is None, NO_YAML)
class KubernetesManifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_k8s()
        cls.ds = cls.docs["DaemonSet"][0]
        cls.pod = cls.ds["spec"]["template"]["spec"]
        cls.main = next(c for c in cls.pod["containers"] if c["name"] == "larder")

    def test_every_yaml_parses_and_is_a_k8s_object(self):
        files = [n for n in os.listdir(K8S_DIR) if n.endswith((".yaml", ".yml"))]
        self.assertGreaterEqual(len(files), 3)
        for name in files:
            with self.subTest(file=name):
                with open(os.path.join(K8S_DIR, name), encoding="utf-8") as f:
                    docs = [d for d in yaml.safe_load_all(f) if d is not None]
                self.assertTrue(docs)
                for d in docs:
                    self.assertIn("apiVersion", d)
                    self.assertIn("kind", d)
                    self.assertTrue(d["metadata"]["name"])
        self.assertEqual(sorted(self.docs), ["ConfigMap", "DaemonSet", "Service"])

    def test_daemonset_runs_on_gpu_nodes(self):
        self.assertEqual(self.ds["apiVersion"], "apps/v1")
        self.assertTrue(self.pod.get("nodeSelector") or self.pod.get("affinity"))
        self.assertTrue(any("gpu" in t.get("key", "") for t in self.pod.get("tolerations", [])))
        self.assertEqual(self.main["image"], "larder:latest")

    def test_probes_run_redis_cli_ping(self):
        for kind in ("readinessProbe", "livenessProbe"):
            with self.subTest(probe=kind):
                self.assertIn(PING, probe_command(self.main[kind]))

    def test_data_on_a_host_path(self):
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        mounts = {m["name"]: m["mountPath"] for m in self.main["volumeMounts"]}
        host = [n for n, v in volumes.items() if "hostPath" in v and n in mounts]
        self.assertTrue(host, "no hostPath volume mounted in the larder container")
        self.assertTrue(volumes["data"]["hostPath"]["path"].startswith("/mnt/nvme/"))
        # The config's dir is where the data volume is mounted.
        conf = self.docs["ConfigMap"][0]["data"]["larder.conf"]
        self.assertRegex(conf, r"(?m)^dir " + re.escape(mounts["data"]) + r"\s*$")

    def test_config_from_the_configmap(self):
        cm = self.docs["ConfigMap"][0]
        names = [v["configMap"]["name"] for v in self.pod["volumes"] if "configMap" in v]
        self.assertIn(cm["metadata"]["name"], names)
        conf = cm["data"]["larder.conf"]
        for line in ("bind 0.0.0.0", "port 6379", "protected-mode yes"):
            self.assertRegex(conf, r"(?m)^" + re.escape(line) + r"\s*$")
        # The password comes from a Secret, never from the ConfigMap.
        self.assertNotRegex(conf, r"(?m)^requirepass")
        refs = [e["valueFrom"]["secretKeyRef"]["name"]
                for c in self.pod["containers"] + self.pod.get("initContainers", [])
                for e in c.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
        self.assertTrue(refs)

    def test_resources(self):
        res = self.main["resources"]
        for part in ("requests", "limits"):
            for what in ("cpu", "memory"):
                self.assertIn(what, res[part], f"{part}.{what}")

    def test_non_root_and_graceful_shutdown(self):
        self.assertTrue(self.pod["securityContext"]["runAsNonRoot"])
        self.assertNotEqual(self.pod["securityContext"].get("runAsUser"), 0)
        sc = self.main["securityContext"]
        self.assertFalse(sc["allowPrivilegeEscalation"])
        self.assertNotIn("runAsUser", sc)  # inherits the pod's non-root user
        self.assertGreaterEqual(self.pod["terminationGracePeriodSeconds"], 60)

    def test_service_is_node_local(self):
        svc = self.docs["Service"][0]
        spec = svc["spec"]
        self.assertEqual(spec["internalTrafficPolicy"], "Local")
        self.assertEqual(spec.get("type", "ClusterIP"), "ClusterIP")
        labels = self.ds["spec"]["template"]["metadata"]["labels"]
        for k, v in spec["selector"].items():
            self.assertEqual(labels.get(k), v)
        port = spec["ports"][0]
        self.assertEqual(port["port"], 6379)
        named = {p["name"]: p["containerPort"] for p in self.main["ports"]}
        self.assertEqual(named[port["targetPort"]], 6379)


@unittest.skipIf(yaml is None, NO_YAML)
class ClusterManifests(unittest.TestCase):
    """conf/k8s/cluster: kvrocks-controller with its etcd, and the patch that makes the
    DaemonSet's pods cluster nodes."""

    @classmethod
    def setUpClass(cls):
        cls.docs = load_k8s(os.path.join(K8S_DIR, "cluster"))
        cls.base = load_k8s()["DaemonSet"][0]

    def by_name(self, kind, name):
        return next(d for d in self.docs[kind] if d["metadata"]["name"] == name)

    def test_kinds(self):
        self.assertEqual(sorted(self.docs), ["ConfigMap", "DaemonSet", "Deployment", "Service",
                                             "StatefulSet"])

    def test_controller_config_points_at_the_etcd_service(self):
        config = yaml.safe_load(self.by_name("ConfigMap", "kvrocks-controller")["data"][
            "config.yaml"])
        host, port = config["etcd"]["addrs"][0].split(":")
        etcd = self.by_name("Service", host)
        self.assertEqual(etcd["spec"]["ports"][0]["port"], int(port))
        sts = self.by_name("StatefulSet", host)
        self.assertEqual(sts["spec"]["template"]["metadata"]["labels"], etcd["spec"]["selector"])
        # The controller's Service exposes the port its config listens on.
        api = self.by_name("Service", "kvrocks-controller")
        self.assertEqual(api["spec"]["ports"][0]["port"], int(config["addr"].split(":")[1]))

    def test_controller_reads_the_configmap_where_its_image_looks(self):
        dep = self.by_name("Deployment", "kvrocks-controller")
        pod = dep["spec"]["template"]["spec"]
        mount = pod["containers"][0]["volumeMounts"][0]
        self.assertEqual(mount["mountPath"], "/var/lib/kvctl/config.yaml")  # image ENTRYPOINT
        self.assertEqual(mount["subPath"], "config.yaml")
        volume = next(v for v in pod["volumes"] if v["name"] == mount["name"])
        self.assertEqual(volume["configMap"]["name"], "kvrocks-controller")
        api = self.by_name("Service", "kvrocks-controller")
        self.assertEqual(api["spec"]["selector"], dep["spec"]["template"]["metadata"]["labels"])

    def test_patch_enables_cluster_mode_on_the_host_network(self):
        patch = self.docs["DaemonSet"][0]
        self.assertEqual(patch["metadata"]["name"], self.base["metadata"]["name"])
        spec = patch["spec"]["template"]["spec"]
        self.assertTrue(spec["hostNetwork"])
        self.assertEqual(spec["dnsPolicy"], "ClusterFirstWithHostNet")
        base_main = next(c for c in self.base["spec"]["template"]["spec"]["containers"]
                         if c["name"] == "larder")
        patched = spec["containers"][0]
        self.assertEqual(patched["name"], "larder")
        # The base's command (its config path) plus the one option.
        self.assertEqual(patched["command"], base_main["command"] + ["--cluster-enabled", "yes"])


class SystemdUnit(unittest.TestCase):
    def setUp(self):
        self.unit = parse_unit(UNIT)
        self.svc = self.unit["Service"]

    def one(self, key):
        self.assertIn(key, self.svc)
        return self.svc[key][-1]

    def test_contents(self):
        argv = shlex.split(self.one("ExecStart"))
        self.assertEqual(argv[:2], ["/usr/local/bin/larder-server", "/etc/larder/larder.conf"])
        self.assertEqual(self.one("Type"), "simple")
        self.assertEqual(self.one("User"), "larder")
        self.assertEqual(self.one("StateDirectory"), "larder")
        self.assertEqual(self.one("Restart"), "on-failure")
        self.assertGreaterEqual(int(self.one("LimitNOFILE")), 65536)
        self.assertEqual(self.one("ProtectSystem"), "strict")
        self.assertIn("/var/lib/larder", self.one("ReadWritePaths"))
        self.assertEqual(self.one("NoNewPrivileges"), "yes")
        self.assertEqual(self.one("PrivateTmp"), "yes")
        self.assertIn("multi-user.target", self.unit["Install"]["WantedBy"])

    def test_filter_allows_the_calls_the_server_makes_outside_system_service(self):
        # mincore tells a GET whether its value is in the page cache: filtered out (EPERM),
        # every GET silently becomes a cold read.
        allowed = [w for v in self.svc["SystemCallFilter"] if not v.startswith("~")
                   for w in v.split()]
        self.assertIn("@system-service", allowed)
        self.assertIn("mincore", allowed)

    def test_systemd_analyze_verify(self):
        """`systemd-analyze verify` on a temp copy whose ExecStart runs /bin/true.

        The unit names /usr/local/bin/larder-server, which need not exist where the tests run,
        and verify fails on a missing binary; everything else in the unit is verified as is.
        """
        tool = shutil.which("systemd-analyze")
        if tool is None:
            self.skipTest("systemd-analyze is not installed")
        with open(UNIT, encoding="utf-8") as f:
            text = f.read()
        self.assertIn("ExecStart=/usr/local/bin/larder-server ", text)
        text = text.replace("ExecStart=/usr/local/bin/larder-server ", "ExecStart=/bin/true ")
        with tempfile.TemporaryDirectory() as tmp:
            def verify(name, body):
                path = os.path.join(tmp, name)
                with open(path, "w", encoding="utf-8") as f:
                    f.write(body)
                try:
                    p = subprocess.run([tool, "verify", path], capture_output=True, text=True,
                                       timeout=120)
                except (OSError, subprocess.TimeoutExpired) as e:
                    self.skipTest(f"systemd-analyze verify does not run here: {e}")
                mine = [ln for ln in (p.stdout + p.stderr).splitlines() if name in ln]
                return p.returncode, mine, p.stdout + p.stderr

            # First make sure verify works in this sandbox: it must flag an unknown key.
            _, flagged, out = verify("probe-bad.service",
                                     "[Service]\nExecStart=/bin/true\nNoSuchKey=1\n")
            if not flagged:
                self.skipTest("systemd-analyze verify reports nothing in this sandbox "
                              f"(no container init?): {out.strip()[:200]}")
            code, mine, out = verify("larder.service", text)
            self.assertEqual(code, 0, out)
            self.assertEqual(mine, [], out)  # no warning about the unit itself


class DeployDoc(unittest.TestCase):
    def test_mentions_the_essentials(self):
        with open(DEPLOY_MD, encoding="utf-8") as f:
            doc = f.read()
        for needle in ("redis://127.0.0.1:6379", "unix:///run/larder/larder.sock",
                       "larder-sizing", "max-disk-bytes", "format version", "downgrade",
                       "conf/larder.service", "DaemonSet"):
            self.assertIn(needle, doc)

    def test_sizing_example_is_the_tools_real_output(self):
        with open(DEPLOY_MD, encoding="utf-8") as f:
            doc = f.read()
        m = re.search(r"```console\n\$ (tools/sizing/larder-sizing[^\n]*)\n(.*?)```", doc, re.S)
        self.assertIsNotNone(m, "no ```console example of larder-sizing in docs/deploy.md")
        argv = shlex.split(m.group(1))
        p = subprocess.run([os.path.join(ROOT, argv[0]), *argv[1:]], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout, m.group(2))


if __name__ == "__main__":
    unittest.main()
