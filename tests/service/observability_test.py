"""The example alerting rules and Grafana dashboard of docs/ against a real `rankd serve`:
python3 observability_test.py <path to rankd> <source folder> (run by ctest, labels cli and
integration, with Debian's python3, its python3-prometheus-client and python3-yaml).

- docs/alerts/rankd-alerts.yml is a Prometheus rules file: `promtool check rules` when promtool is
  on the PATH, else its structure checked here (groups, rules, durations, labels, annotations).
- docs/grafana/rankd-dashboard.json is a dashboard Grafana imports (its datasource an input,
  unique panel ids, the panels on the 24-column grid).
- Every metric either names in a PromQL expression (or a dashboard variable's label_values query)
  is in the /metrics of a server that has answered a few requests (ranked, degraded, failed, an
  HTTP-layer 404), and every label they match on is one of that metric's labels.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml
from prometheus_client.parser import text_string_to_metric_families

from rankd_harness import serve_fixture
from rankd_harness.serve_fixture import SharedServer

RANKD = SOURCE = None

# PromQL's functions, aggregation operators and keywords (prometheus/promql/parser): identifiers
# that are not metric names.
FUNCTIONS = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
    "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
    "count_over_time", "day_of_month", "day_of_week", "day_of_year", "days_in_month", "deg",
    "delta", "deriv", "exp", "floor", "histogram_count", "histogram_fraction",
    "histogram_quantile", "histogram_sum", "holt_winters", "hour", "idelta", "increase", "irate",
    "label_join", "label_replace", "last_over_time", "ln", "log10", "log2", "mad_over_time",
    "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
    "present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar", "sgn",
    "sin", "sinh", "sort", "sort_desc", "sqrt", "stddev_over_time", "stdvar_over_time",
    "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
}
AGGREGATIONS = {"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count", "count_values",
                "bottomk", "topk", "quantile"}
# Keywords followed by a parenthesized list of label names.
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
KEYWORDS = {"and", "or", "unless", "bool", "offset", "atan2", "inf", "nan"} | LABEL_LIST_KEYWORDS
# Labels Prometheus adds to every series it scrapes (not in the exposition).
TARGET_LABELS = {"job", "instance"}

IDENTIFIER = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")
NUMBER = re.compile(r"(0[xX][0-9a-fA-F]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)")
STRING = re.compile(r'"(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|`[^`]*`')
MATCHER = re.compile(r'\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*'
                     r'("(\\.|[^"\\])*"|\'(\\.|[^\'\\])*\'|`[^`]*`)\s*,?')


def matchers(text):
    """The label names of a selector's matchers `{a="x", b=~"y"}` (without the braces)."""
    labels, at = [], 0
    while at < len(text.strip()):
        m = MATCHER.match(text, at)
        if not m:
            raise ValueError("not a label matcher at %r" % text[at:])
        labels.append(m.group(1))
        at = m.end()
    return labels


def closing(expr, at, open_char, close_char):
    """The index just past the bracket closing the one at `at` (strings inside skipped)."""
    depth = 0
    i = at
    while i < len(expr):
        c = expr[i]
        if c in "\"'`":
            m = STRING.match(expr, i)
            if not m:
                raise ValueError("unterminated string in %r" % expr)
            i = m.end()
            continue
        if c == open_char:
            depth += 1
        elif c == close_char:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError("unbalanced %s in %r" % (open_char, expr))


def metric_selectors(expr):
    """Each metric a PromQL expression reads: [(name, [label names it matches on])]."""
    return references(expr)[0]


def references(expr):
    """What a PromQL expression names: ([(metric, [label names it matches on])], [label names of
    its `by (...)`, `on (...)` ... lists]). Function names, aggregation operators, keywords,
    ranges (`[5m]`), strings and numbers are skipped; an identifier not followed by `(` that is
    none of those is a metric."""
    found = []
    grouping = []
    depth = 0  # of parentheses
    i = 0
    while i < len(expr):
        c = expr[i]
        if c in "()":
            depth += 1 if c == "(" else -1
            if depth < 0:
                raise ValueError("unbalanced ) in %r" % expr)
            i += 1
        elif c.isspace() or c in "+-*/%^,<>=!":
            i += 1
        elif c in "\"'`":
            m = STRING.match(expr, i)
            if not m:
                raise ValueError("unterminated string in %r" % expr)
            i = m.end()
        elif c == "[":  # a range or subquery: durations, maybe a $variable
            i = closing(expr, i, "[", "]")
        elif c == "{":
            raise ValueError("a selector without a metric name in %r" % expr)
        elif c.isdigit() or (c == "." and i + 1 < len(expr) and expr[i + 1].isdigit()):
            i = NUMBER.match(expr, i).end()
            i = IDENTIFIER.match(expr, i).end() if IDENTIFIER.match(expr, i) else i  # 5m
        else:
            m = IDENTIFIER.match(expr, i)
            if not m:
                raise ValueError("unexpected %r in %r" % (expr[i:i + 20], expr))
            word, i = m.group(0), m.end()
            rest = expr[i:].lstrip()
            if word in LABEL_LIST_KEYWORDS:
                if rest.startswith("("):  # group_left may stand alone
                    start = expr.index("(", i)
                    i = closing(expr, start, "(", ")")
                    names = [n.strip() for n in expr[start + 1:i - 1].split(",") if n.strip()]
                    for name in names:
                        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                            raise ValueError("not a label name: %r in %r" % (name, expr))
                    grouping.extend(names)
            elif word in KEYWORDS or word in AGGREGATIONS:
                continue
            elif rest.startswith("("):
                if word not in FUNCTIONS:
                    raise ValueError("unknown PromQL function %s in %r" % (word, expr))
            else:
                labels = []
                if rest.startswith("{"):
                    start = expr.index("{", i)
                    end = closing(expr, start, "{", "}")
                    labels = matchers(expr[start + 1:end - 1])
                    i = end
                found.append((word, labels))
    if depth != 0:
        raise ValueError("unbalanced ( in %r" % expr)
    return found, grouping


def label_values_metrics(query):
    """The metric a Grafana variable's `label_values(metric{...}, label)` reads, as
    metric_selectors gives it (and the label it lists among the labels it needs)."""
    m = re.fullmatch(r"\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*", query)
    if not m:
        raise ValueError("not a label_values query: %r" % query)
    selectors = metric_selectors(m.group(1))
    return [(name, labels + [m.group(2)]) for name, labels in selectors]


def exposition(text):
    """{sample name: set of its label names}: histograms as their _bucket (with le), _sum and
    _count series, counters as their _total series."""
    series = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            series.setdefault(sample.name, set()).update(sample.labels)
    return series


def load_rules():
    with open(os.path.join(SOURCE, "docs/alerts/rankd-alerts.yml")) as f:
        return yaml.safe_load(f)


def load_dashboard():
    with open(os.path.join(SOURCE, "docs/grafana/rankd-dashboard.json")) as f:
        return json.load(f)


def rule_expressions(rules):
    return [(rule.get("alert") or rule.get("record"), rule["expr"])
            for group in rules["groups"] for rule in group["rules"]]


def dashboard_expressions(dashboard):
    exprs = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            exprs.append((panel["title"], target["expr"]))
    return exprs


class PromqlNamesTest(unittest.TestCase):
    """The name extraction itself, on expressions whose metrics are known."""

    def test_names_labels_and_what_is_not_a_name(self):
        self.assertEqual(
            metric_selectors('histogram_quantile(0.99, sum by (plan, le) '
                             '(rate(a_bucket{plan=~"f.*", x!="}"}[$__rate_interval])))'),
            [("a_bucket", ["plan", "x"])])
        self.assertEqual(
            metric_selectors("sum without (shard) (rate(b_total[5m] offset 1h)) / on (job) "
                             "group_left c > bool 1e3 and time() - d"),
            [("b_total", []), ("c", []), ("d", [])])
        self.assertEqual(metric_selectors('max by (e) (rankd:e_ratio{e="1"}) unless f == 0.5'),
                         [("rankd:e_ratio", ["e"]), ("f", [])])
        self.assertEqual(label_values_metrics('label_values(g{instance=~"$i"}, plan)'),
                         [("g", ["instance", "plan"])])
        self.assertEqual(references("sum by (a, le) (x) / on (b) group_left (c) y")[1],
                         ["a", "le", "b", "c"])

    def test_what_it_cannot_read_is_an_error(self):
        for bad in ["rate(a[5m]", "rate(a))", 'a{b="c"', "nosuchfunction(a)", '{__name__="a"}',
                    "a{b}", "sum by (a b) (x)"]:
            with self.subTest(expr=bad), self.assertRaises(ValueError):
                metric_selectors(bad)


class RulesFileTest(unittest.TestCase):
    def test_promtool_or_the_structure_of_a_rules_file(self):
        path = os.path.join(SOURCE, "docs/alerts/rankd-alerts.yml")
        promtool = shutil.which("promtool")
        if promtool:
            r = subprocess.run([promtool, "check", "rules", path], capture_output=True, text=True,
                               timeout=60)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        rules = load_rules()
        self.assertEqual(set(rules), {"groups"})
        alerts = []
        for group in rules["groups"]:
            self.assertLessEqual(set(group), {"name", "interval", "rules"})
            self.assertTrue(group["name"])
            for rule in group["rules"]:
                self.assertLessEqual(set(rule), {"alert", "expr", "for", "labels", "annotations"})
                self.assertRegex(rule["alert"], r"^[A-Za-z_][A-Za-z0-9_]*$")
                self.assertIsInstance(rule["expr"], str)
                self.assertRegex(rule.get("for", "0s"), r"^([0-9]+(ms|s|m|h|d|w|y))+$")
                for key in ("labels", "annotations"):
                    self.assertTrue(all(isinstance(k, str) and isinstance(v, str)
                                        for k, v in rule.get(key, {}).items()), rule)
                self.assertIn(rule["labels"]["severity"], ("page", "warning"))
                self.assertTrue(rule["annotations"]["summary"])
                alerts.append(rule["alert"])
        self.assertEqual(len(alerts), len(set(alerts)))
        # The four the operators' guide promises.
        exprs = " ".join(expr for _, expr in rule_expressions(rules))
        for name in ("rankd_requests_total", "rankd_node_degraded_total",
                     "rankd_requests_shed_total", "rankd_request_duration_seconds_bucket"):
            self.assertIn(name, exprs)
        self.assertIn("histogram_quantile(0.99", exprs)


class DashboardFileTest(unittest.TestCase):
    def test_a_dashboard_grafana_imports(self):
        d = load_dashboard()
        self.assertEqual([i["name"] for i in d["__inputs"]], ["DS_PROMETHEUS"])
        self.assertTrue(d["title"] and d["uid"])
        ids = [p["id"] for p in d["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        for panel in d["panels"]:
            with self.subTest(panel=panel["title"]):
                g = panel["gridPos"]
                self.assertLessEqual(g["x"] + g["w"], 24)
                if panel["type"] == "row":
                    continue
                self.assertEqual(panel["datasource"]["uid"], "${DS_PROMETHEUS}")
                self.assertTrue(panel["targets"])
                refs = [t["refId"] for t in panel["targets"]]
                self.assertEqual(len(refs), len(set(refs)))
        titles = " ".join(p["title"] for p in d["panels"]).lower()
        for wanted in ("status", "plan", "p99", "error", "degraded", "shed", "queue delay",
                       "stalls", "memory", "cpu"):
            self.assertIn(wanted, titles)


class MetricsNamedExistTest(SharedServer):
    @classmethod
    def server_flags(cls, folder):
        # Every family the server can expose: rankd_log_lines_total only where it writes a file.
        return ("--capture_file", os.path.join(folder, "captures.jsonl"))

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        try:
            cls.text = cls.serve_a_few_requests(cls.server)
            cls.series = exposition(cls.text)
        except BaseException:
            cls.tearDownClass()  # it does not run after a failed setUpClass
            raise

    @staticmethod
    def serve_a_few_requests(server):
        """A ranked request, a degraded one (timeouts' slow_ranker), a failed one, an unknown
        plan and an HTTP-layer 404, so that every family with labels has series; then /metrics."""
        for request, status in [({"plan": "feed", "viewer_id": 1}, 200),
                                ({"plan": "timeouts", "viewer_id": 1}, 200),
                                ({"plan": "feed", "viewer_id": 1, "params": {"zzz": 1}}, 400),
                                ({"plan": "no such plan"}, 404)]:
            got = server.rank(request)
            if got[0] != status:
                raise AssertionError("%s answered %s, not %s" % (request, got, status))
        if server.request("GET", "/no/such/path")[0] != 404:
            raise AssertionError("GET /no/such/path did not answer 404")
        status, _, text = server.request("GET", "/metrics")
        if status != 200:
            raise AssertionError("GET /metrics answered %s: %s" % (status, text))
        return text

    def assertNamedMetricsExist(self, where, selectors, grouping=()):
        """Each metric of `selectors` is in /metrics with the labels it is matched on, and each
        label of `grouping` is one of those metrics' labels."""
        known = set(TARGET_LABELS)
        for name, labels in selectors:
            with self.subTest(where=where, metric=name):
                self.assertIn(name, self.series, "not in /metrics")
                unknown = set(labels) - self.series[name] - TARGET_LABELS
                self.assertFalse(unknown, "labels %s are not %s's" % (sorted(unknown), name))
                known |= self.series[name]
        with self.subTest(where=where, grouping=grouping):
            self.assertFalse(set(grouping) - known, "grouped by labels no metric of it has")

    def test_every_metric_the_rules_name_exists(self):
        exprs = rule_expressions(load_rules())
        self.assertGreaterEqual(len(exprs), 4)
        for alert, expr in exprs:
            selectors, grouping = references(expr)
            self.assertTrue(selectors, alert)
            self.assertNamedMetricsExist(alert, selectors, grouping)

    def test_every_metric_the_dashboard_names_exists(self):
        d = load_dashboard()
        exprs = dashboard_expressions(d)
        self.assertGreaterEqual(len(exprs), 10)
        for title, expr in exprs:
            selectors, grouping = references(expr)
            self.assertTrue(selectors, title)
            self.assertNamedMetricsExist(title, selectors, grouping)
        for variable in d["templating"]["list"]:
            self.assertNamedMetricsExist("$" + variable["name"],
                                         label_values_metrics(variable["definition"]))

    def test_the_operators_guide_lists_every_family_with_its_type(self):
        with open(os.path.join(SOURCE, "docs/operations.md")) as f:
            guide = f.read()
        section = guide[guide.index("\n## Metrics\n"):]
        section = section[:section.index("\n## ", 1)]
        documented = set(re.findall(r"^\| `([a-z_:]+)` \| (counter|gauge|histogram) \|", section,
                                    re.MULTILINE))
        exposed = set(re.findall(r"^# TYPE (\S+) (\S+)$", self.text, re.MULTILINE))
        self.assertEqual(exposed, documented)

    def test_the_dashboard_and_rules_cover_the_families_operators_watch(self):
        named = {name for _, expr in rule_expressions(load_rules()) + dashboard_expressions(
            load_dashboard()) for name, _ in metric_selectors(expr)}
        for name in ("rankd_requests_total", "rankd_request_duration_seconds_bucket",
                     "rankd_node_degraded_total", "rankd_requests_shed_total",
                     "rankd_redis_queue_delay_seconds", "rankd_event_loop_stalls_total",
                     "process_resident_memory_bytes", "process_cpu_seconds_total"):
            self.assertIn(name, named)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    serve_fixture.configure(RANKD, SOURCE)
    unittest.main(argv=sys.argv[:1], verbosity=2)
