#!/usr/bin/python3
"""Checks of the Grafana dashboard conf/grafana/larder-dashboard.json.

DashboardStructure reads the JSON only: identity (uid, title, tags), the datasource / instance /
cmd template variables, unique panel ids and a layout without overlaps, a PromQL expression in
every target, each selector filtered by $instance, known units, and thresholds that make the
should-be-zero counters stand out.

DashboardAgainstServer starts a real larder-server with --metrics-port, runs a few commands
through redis-py so the per-command series exist, scrapes GET /metrics and checks that every
metric the dashboard queries is exported (a histogram as its _bucket/_sum/_count samples), with
the type its use needs (rate()/increase() of counters and histograms, gauges read as they are)
and the labels the queries and legends name (cmd, mode, version, le).

Run: LARDER_SERVER=build/bin/larder-server /usr/bin/python3 -m unittest -v test_dashboard
(from tests/tools; CTest sets LARDER_SERVER and LARDER_SOURCE_DIR). Without LARDER_SERVER the
server is looked for in build/bin, as every server test does, and the test fails if it is not
there.
"""

import json
import os
import re
import sys
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("LARDER_SOURCE_DIR") or os.path.abspath(os.path.join(HERE, "..", ".."))
DASHBOARD = os.path.join(ROOT, "conf", "grafana", "larder-dashboard.json")

sys.path.insert(0, os.path.join(HERE, "..", "server"))
import server_harness  # noqa: E402

DATASOURCE_UID = "${datasource}"
INSTANCE_FILTER = 'instance=~"$instance"'
INSTANCE_QUERY = "label_values(larder_build_info, instance)"
# Labels Prometheus adds at scrape time: no sample of the endpoint carries them.
SCRAPE_LABELS = {"instance", "job"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

METRIC = re.compile(r"(?<![A-Za-z0-9_:])larder_[a-z0-9_]+")
# A metric name and the label matchers right after it, if any.
SELECTOR = re.compile(r"(?<![A-Za-z0-9_:])(larder_[a-z0-9_]+)\s*(\{[^}]*\})?")
# The metric a rate()/irate()/increase() is taken of.
RATED = re.compile(r"\b(?:rate|irate|increase)\(\s*(larder_[a-z0-9_]+)")
GROUPING = re.compile(r"\b(?:by|without)\s*\(([^)]*)\)")
MATCHER_LABEL = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*(?:=~|!~|!=|=)")
LEGEND_LABEL = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
LABEL_VALUES = re.compile(r"^\s*label_values\(\s*(.*?)\s*,\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$")

# Patterns rather than bare words: test_deps_listed reads a quoted "prometheus" or "red" in a test
# source as the program of that name (/usr/bin/red is ed's).
PROMETHEUS_PLUGIN = r"^prometheus$"     # the datasource plugin id
RED = re.compile(r"(?:dark-|semi-dark-|light-|super-light-)?red")  # Grafana's reds

# Units Grafana 9/10 know that suit Larder's figures.
KNOWN_UNITS = {"bytes", "decbytes", "Bps", "binBps", "percentunit", "percent", "s", "ms",
               "ops", "reqps", "short", "none"}

# What an inference platform operator needs to find on the dashboard (the metrics behind it).
REQUIRED_METRICS = {
    "larder_disk_bytes", "larder_budget_used_bytes", "larder_max_disk_bytes", "larder_live_bytes",
    "larder_keys",
    "larder_hits_total", "larder_misses_total", "larder_command_duration_seconds_count",
    "larder_command_duration_seconds_bucket", "larder_bytes_read_total",
    "larder_bytes_written_total", "larder_evicted_keys_total", "larder_evicted_bytes_total",
    "larder_reinserted_keys_total", "larder_expired_keys_total", "larder_corruptions_total",
    "larder_failed_writes_total", "larder_connected_clients", "larder_net_input_bytes_total",
    "larder_net_output_bytes_total", "larder_client_output_buffer_limit_disconnections_total",
    "larder_cpu_seconds_total", "larder_resident_memory_bytes", "larder_pending_bytes",
}
# Counters that stay at zero on a healthy node: their panels must turn red above zero.
ZERO_COUNTERS = {"larder_corruptions_total", "larder_failed_writes_total"}


def load_dashboard():
    with open(DASHBOARD, encoding="utf-8") as f:
        return json.load(f)


def all_panels(dashboard):
    """Every panel, the rows' own (collapsed rows keep theirs in "panels") included."""
    out = []
    for p in dashboard.get("panels", []):
        out.append(p)
        out.extend(p.get("panels", []) if p.get("type") == "row" else [])
    return out


def variables(dashboard):
    return {v["name"]: v for v in dashboard.get("templating", {}).get("list", [])}


def variable_query(var):
    """A query variable's query text (Grafana keeps it as a string or as {"query": ...})."""
    q = var.get("query")
    return q.get("query", "") if isinstance(q, dict) else (q or "")


def panel_exprs(dashboard):
    """(where, target or annotation, expr) of every PromQL expression panels and annotations
    run."""
    out = []
    for p in all_panels(dashboard):
        for t in p.get("targets", []):
            out.append((f"panel {p.get('id')} {p.get('title')!r} {t.get('refId')}", t,
                        t.get("expr", "")))
    for a in dashboard.get("annotations", {}).get("list", []):
        if "expr" in a:
            out.append((f"annotation {a.get('name')!r}", a, a["expr"]))
    return out


def variable_exprs(dashboard):
    """(where, label_values selector, label) of the query variables."""
    out = []
    for name, var in variables(dashboard).items():
        if var.get("type") == "query":
            m = LABEL_VALUES.match(variable_query(var))
            out.append((f"variable {name}", m.group(1) if m else variable_query(var),
                        m.group(2) if m else None))
    return out


def metrics_in(expr):
    return set(METRIC.findall(expr))


def labels_named(expr, legend=""):
    """Labels an expression (groupings, matchers) and its legend refer to."""
    names = set()
    for group in GROUPING.findall(expr):
        names |= {n.strip() for n in group.split(",") if n.strip()}
    for _, matchers in SELECTOR.findall(expr):
        names |= set(MATCHER_LABEL.findall(matchers))
    names |= set(LEGEND_LABEL.findall(legend or ""))
    return names


def balanced(expr):
    """True if (), [] and {} nest properly outside string literals."""
    pairs, stack, quote = {")": "(", "]": "[", "}": "{"}, [], None
    i = 0
    while i < len(expr):
        c = expr[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'`":
            quote = c
        elif c in "([{":
            stack.append(c)
        elif c in ")]}":
            if not stack or stack.pop() != pairs[c]:
                return False
        i += 1
    return not stack and quote is None


def grafana_units(panel):
    """Every unit a panel sets, in its defaults and its overrides."""
    fc = panel.get("fieldConfig", {})
    units = [fc.get("defaults", {}).get("unit")]
    for o in fc.get("overrides", []):
        units += [p["value"] for p in o.get("properties", []) if p.get("id") == "unit"]
    return [u for u in units if u is not None]


def no_problems(test, problems):
    """Fails `test` with one line per problem found (each once), if any."""
    if problems:
        test.fail("\n" + "\n".join(dict.fromkeys(problems)))


class DashboardStructure(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = load_dashboard()

    def test_identity(self):
        d = self.d
        self.assertEqual(d.get("uid"), "larder-overview")
        self.assertEqual(d.get("title"), "Larder")
        self.assertTrue({"larder", "kv-cache"} <= set(d.get("tags", [])), d.get("tags"))
        self.assertIn(d.get("schemaVersion"), range(36, 39),
                      "schemaVersion outside what Grafana 9 and 10 both import")
        self.assertIsNone(d.get("id"), "an exported dashboard has id null (import assigns one)")
        self.assertTrue(d.get("panels"))

    def test_template_variables(self):
        v = variables(self.d)
        ds = v.get("datasource")
        self.assertIsNotNone(ds, "no datasource variable")
        self.assertEqual(ds["type"], "datasource")
        self.assertRegex(ds["query"], PROMETHEUS_PLUGIN)
        inst = v.get("instance")
        self.assertIsNotNone(inst, "no instance variable")
        self.assertEqual(inst["type"], "query")
        self.assertEqual(variable_query(inst).replace(" ", ""), INSTANCE_QUERY.replace(" ", ""))
        self.assertTrue(inst.get("multi"), "instance must allow several instances")
        self.assertTrue(inst.get("includeAll"), "instance must offer All")
        for name, var in v.items():
            if var.get("type") == "query":
                with self.subTest(variable=name):
                    self.assertEqual(var.get("datasource", {}).get("uid"), DATASOURCE_UID)

    def test_panel_ids_are_unique_and_the_layout_fits(self):
        panels = all_panels(self.d)
        ids = [p.get("id") for p in panels]
        self.assertTrue(all(isinstance(i, int) for i in ids), ids)
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        self.assertEqual(dupes, [], "panel ids used more than once")
        boxes = []
        for p in self.d["panels"]:  # top level: what an expanded dashboard shows
            g = p.get("gridPos", {})
            with self.subTest(panel=p.get("title")):
                for k in ("x", "y", "w", "h"):
                    self.assertIsInstance(g.get(k), int, k)
                self.assertTrue(g["x"] >= 0 and g["w"] > 0 and g["x"] + g["w"] <= 24, g)
            boxes.append((p.get("title"), g))
        for i, (ta, a) in enumerate(boxes):
            for tb, b in boxes[i + 1:]:
                overlap = (a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"]
                           and a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"])
                self.assertFalse(overlap, f"panels {ta!r} and {tb!r} overlap")

    def test_every_panel_queries_prometheus_through_the_variable(self):
        for p in all_panels(self.d):
            if p.get("type") in ("row", "text"):
                continue
            with self.subTest(panel=p.get("title")):
                self.assertEqual(p.get("datasource", {}).get("uid"), DATASOURCE_UID)
                targets = p.get("targets", [])
                self.assertTrue(targets, "panel has no targets")
                ref_ids = [t.get("refId") for t in targets]
                self.assertEqual(len(set(ref_ids)), len(ref_ids), f"refIds {ref_ids}")
                for t in targets:
                    self.assertIsInstance(t.get("expr"), str)
                    self.assertTrue(t["expr"].strip(), f"target {t.get('refId')} has no expr")
                    if "datasource" in t:
                        self.assertEqual(t["datasource"].get("uid"), DATASOURCE_UID)
        for a in self.d.get("annotations", {}).get("list", []):
            if "expr" in a:
                self.assertEqual(a.get("datasource", {}).get("uid"), DATASOURCE_UID, a["name"])

    def test_every_selector_is_filtered_by_instance(self):
        checked = [(where, expr) for where, _, expr in panel_exprs(self.d)]
        checked += [(where, sel) for where, sel, label in variable_exprs(self.d)
                    if where != "variable instance"]  # the instance list itself
        problems = []
        for where, expr in checked:
            self.assertTrue(metrics_in(expr), f"{where}: no larder_ metric in {expr!r}")
            for name, matchers in SELECTOR.findall(expr):
                if INSTANCE_FILTER not in matchers.replace(" ", ""):
                    problems.append(f"{where}: {name}{matchers} lacks {{{INSTANCE_FILTER}}}")
        no_problems(self, problems)

    def test_expressions_are_well_formed(self):
        for where, _, expr in panel_exprs(self.d):
            with self.subTest(where=where):
                self.assertTrue(balanced(expr), f"unbalanced brackets or quotes: {expr}")
                self.assertNotIn("${DS_", expr)  # an export for sharing, not the variable

    def test_rates_are_taken_of_counters_only(self):
        """By name: a rate()/increase() of a counter (_total) or a histogram's samples, never of
        a gauge; a counter is never plotted as it is (its value since the start means little)."""
        problems = []
        for where, _, expr in panel_exprs(self.d):
            rated_at = {m.start(1) for m in RATED.finditer(expr)}
            for m in METRIC.finditer(expr):
                name = m.group(0)
                counter_like = name.endswith(("_total",) + HISTOGRAM_SUFFIXES)
                if m.start() in rated_at and not counter_like:
                    problems.append(f"{where}: rate/increase of the gauge {name}")
                if m.start() not in rated_at and counter_like:
                    problems.append(f"{where}: counter {name} used without rate/increase")
        no_problems(self, problems)

    def test_units_are_known(self):
        for p in all_panels(self.d):
            if p.get("type") in ("row", "text"):
                continue
            with self.subTest(panel=p.get("title")):
                units = grafana_units(p)
                if p.get("type") != "table":
                    self.assertTrue(units, "no unit set")
                for u in units:
                    self.assertIn(u, KNOWN_UNITS)

    def test_zero_counters_stand_out(self):
        seen = set()
        for p in all_panels(self.d):
            used = set()
            for t in p.get("targets", []):
                used |= metrics_in(t.get("expr", "")) & ZERO_COUNTERS
            if not used:
                continue
            seen |= used
            with self.subTest(panel=p.get("title")):
                defaults = p.get("fieldConfig", {}).get("defaults", {})
                steps = defaults.get("thresholds", {}).get("steps", [])
                red_above_zero = [s for s in steps if RED.fullmatch(s.get("color", ""))
                                  and s.get("value") is not None and 0 < s["value"] <= 1]
                self.assertTrue(red_above_zero, f"no red threshold just above zero: {steps}")
                self.assertEqual(defaults.get("color", {}).get("mode"), "thresholds",
                                 "the colour must follow the thresholds")
        self.assertEqual(seen, ZERO_COUNTERS)

    def test_what_an_operator_needs_is_there(self):
        exprs = [expr for _, _, expr in panel_exprs(self.d)]
        used = set().union(*(metrics_in(e) for e in exprs))
        self.assertEqual(sorted(REQUIRED_METRICS - used), [], "metrics no panel shows")
        self.assertTrue(any("histogram_quantile(0.5," in e.replace(" ", "") for e in exprs),
                        "no p50 latency")
        self.assertTrue(any("histogram_quantile(0.99," in e.replace(" ", "") for e in exprs),
                        "no p99 latency")
        budget = [p for p in all_panels(self.d) for t in p.get("targets", [])
                  if re.search(r"larder_budget_used_bytes\{[^}]*\}\s*/\s*larder_max_disk_bytes",
                               t.get("expr", ""))]
        self.assertTrue({"gauge", "timeseries"} <= {p["type"] for p in budget},
                        "disk budget used wants a gauge and a time series")


# ---- the dashboard against a real server ----

SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+-?\d+)?$")
LABEL_PAIR = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?')


class Exposition:
    """A scrape in the Prometheus text format 0.0.4: the samples' names and labels, and the
    declared types."""

    def __init__(self, text):
        self.types = {}     # family -> counter / gauge / histogram / summary / untyped
        self.samples = {}   # sample name -> [labels dict]
        self.bad_lines = []
        for line in text.splitlines():
            line = line.strip()
            if not line:
                continue
            if line.startswith("#"):
                parts = line.split()
                if len(parts) >= 4 and parts[1] == "TYPE":
                    self.types[parts[2]] = parts[3]
                continue
            m = SAMPLE.match(line)
            labels = self._labels(m.group(2)) if m else None
            if m is None or labels is None or not self._number(m.group(3)):
                self.bad_lines.append(line)
                continue
            self.samples.setdefault(m.group(1), []).append(labels)

    @staticmethod
    def _labels(text):
        if not text:
            return {}
        labels, pos = {}, 0
        while pos < len(text):
            m = LABEL_PAIR.match(text, pos)
            if not m or m.end() == pos:
                return None
            labels[m.group(1)] = m.group(2)
            pos = m.end()
        return labels

    @staticmethod
    def _number(text):
        try:
            float(text)
            return True
        except ValueError:
            return False

    def family_type(self, name):
        """The declared type of the family `name` belongs to (a histogram's _bucket/_sum/_count
        belong to the histogram), or None."""
        if name in self.types:
            return self.types[name]
        for suffix in HISTOGRAM_SUFFIXES + ("_total",):
            if name.endswith(suffix) and name[:-len(suffix)] in self.types:
                return self.types[name[:-len(suffix)]]
        return None

    def label_names(self, name):
        return set().union(*(set(ls) for ls in self.samples.get(name, [])))


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as r:
        return r.status, r.headers.get("Content-Type", ""), r.read().decode("utf-8")


class DashboardAgainstServer(unittest.TestCase):
    """Every metric the dashboard queries, as a real larder-server exports it."""

    def setUp(self):
        self.srv = None

    def tearDown(self):
        if self.srv is not None:
            self.srv.cleanup()

    def start_server(self):
        server = server_harness.SERVER
        if not (os.path.isfile(server) and os.access(server, os.X_OK)):
            self.fail(f"larder-server not found at {server}: build it, or set LARDER_SERVER "
                      "(ctest sets it)")
        self.srv = server_harness.ServerProcess()
        self.metrics_port = server_harness.free_port()  # never self.srv.port
        self.srv.args += ["--metrics-port", str(self.metrics_port)]
        try:
            self.srv.start()
        except RuntimeError as e:
            self.fail(f"larder-server did not start with --metrics-port: {e}")

    def run_commands(self):
        """SET and GET (a hit and a miss), a command that fails (INCR of a non-number) and one
        refused before it runs (GET without its key), so every per-command family has series."""
        import redis
        c = self.srv.client()
        try:
            self.assertTrue(c.set("dashboard:k", b"value"))
            self.assertEqual(c.get("dashboard:k"), b"value")
            self.assertIsNone(c.get("dashboard:missing"))
            self.assertTrue(c.set("dashboard:n", b"not a number"))
            with self.assertRaises(redis.ResponseError):
                c.execute_command("INCR", "dashboard:n")  # redis-py's incr() sends INCRBY
            with self.assertRaises(redis.ResponseError):
                c.execute_command("GET")
        finally:
            c.close()

    def scrape(self, wanted_cmds):
        """The endpoint's exposition once it answers and shows calls of `wanted_cmds` (or the
        last one it gave, after 30 s, for the assertions to say what is missing)."""
        url = f"http://127.0.0.1:{self.metrics_port}/metrics"
        last = {}

        def attempt():
            try:
                last["reply"] = fetch(url)
            except (OSError, urllib.error.URLError) as e:
                last["error"] = e
                return None
            cmds = {ls.get("cmd") for ls in Exposition(last["reply"][2]).samples.get(
                "larder_command_duration_seconds_count", [])}
            return wanted_cmds <= cmds

        try:
            server_harness.wait_for(attempt, timeout=30)
        except AssertionError:
            pass
        if "reply" not in last:
            self.fail(f"no answer from {url}: {last.get('error')}\n{self.srv.read_log()}")
        status, content_type, body = last["reply"]
        self.assertEqual(status, 200)
        self.assertTrue(content_type.startswith("text/plain"), content_type)
        return Exposition(body)

    def test_every_metric_the_dashboard_uses_is_exported(self):
        d = load_dashboard()
        cmd_var = variables(d).get("cmd", {})
        default_cmds = {v for v in cmd_var.get("current", {}).get("value", []) or []
                        if not v.startswith("$")} or {"get", "set"}

        self.start_server()
        self.run_commands()
        exp = self.scrape(default_cmds)
        self.assertEqual(exp.bad_lines, [], "lines not in the text exposition format")

        exprs = panel_exprs(d)
        var_exprs = variable_exprs(d)
        used = set().union(*(metrics_in(e) for _, _, e in exprs),
                           *(metrics_in(s) for _, s, _ in var_exprs))
        missing = sorted(n for n in used if n not in exp.samples)
        if missing:
            self.fail(f"the dashboard queries {missing}, which /metrics does not export (it "
                      f"exports {sorted(exp.samples)})")

        # A histogram's parts: declared as a histogram, with buckets ending at le="+Inf".
        for name in sorted(used):
            for suffix in HISTOGRAM_SUFFIXES:
                if name.endswith(suffix):
                    family = name[:-len(suffix)]
                    with self.subTest(histogram=family):
                        self.assertEqual(exp.types.get(family), "histogram")
                        buckets = exp.samples.get(family + "_bucket", [])
                        self.assertTrue(buckets, f"{family}_bucket is not exported")
                        self.assertIn("+Inf", {b.get("le") for b in buckets})

        # Types: what a panel takes a rate of is a counter (or a histogram's parts); what it
        # shows as it is, a gauge.
        problems = []
        for where, _, expr in exprs:
            rated_at = {m.start(1) for m in RATED.finditer(expr)}
            for m in METRIC.finditer(expr):
                kind = exp.family_type(m.group(0))
                want = ("counter", "histogram") if m.start() in rated_at else ("gauge",)
                if kind not in want:
                    problems.append(f"{where}: {m.group(0)} is declared {kind}, used as "
                                    f"{' or '.join(want)}")
        no_problems(self, problems)

        # Labels: those a query groups or filters by, or a legend shows, are on its metrics.
        problems = []
        for where, target, expr in exprs:
            have = SCRAPE_LABELS.union(*(exp.label_names(n) for n in metrics_in(expr)))
            lacking = labels_named(expr, target.get("legendFormat", "")) - have
            if lacking:
                problems.append(f"{where}: labels {sorted(lacking)} are on none of "
                                f"{sorted(metrics_in(expr))}")
        for where, selector, label in var_exprs:
            have = SCRAPE_LABELS.union(*(exp.label_names(n) for n in metrics_in(selector)))
            if label is None or label not in have:
                problems.append(f"{where}: label {label!r} is on none of "
                                f"{sorted(metrics_in(selector))}")
        no_problems(self, problems)

        # The command variable's defaults name real series (lowercase command names).
        cmds = {ls.get("cmd") for ls in exp.samples["larder_command_duration_seconds_count"]}
        self.assertTrue(default_cmds <= cmds,
                        f"cmd values {sorted(default_cmds - cmds)} not exported ({sorted(cmds)})")


if __name__ == "__main__":
    unittest.main()
