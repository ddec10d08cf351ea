"""The studio page (docs/studio.md) in a real browser: Debian's chromium, headless, driven by
selenium through Debian's chromedriver, against a real `rankd serve` on a private redis-server
with the demo dataset, and `rankc build --watch --reload` over a copy of plans/ (so that the test
can edit plan files as an engineer does).

What it checks: each example plan's DAG has one node per artifact node and one edge per input;
a request run from the generated form answers the table, and the timeline has a bar for every
node with the status explain gave it; a traced id shows the node that removed it; comparing two
plans shows the server's overlap@k; a saved edit of a plan file shows up in the page (the time from
save to redraw is printed, and must be within 2 s); a compile error is shown with file:line:col
and goes away once fixed. Screenshots go to the folder given (the build folder); `make
studio-screenshots` writes them to docs/studio/.

Usage: studio_browser_test.py RANKD SOURCE_DIR SCREENSHOT_DIR"""
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

from selenium import webdriver
from selenium.common.exceptions import JavascriptException, StaleElementReferenceException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.select import Select

from rankd_harness.redis_server import RedisServer

RANKD = SOURCE = SHOTS = None
# What the page must take at most from a saved plan file to its redrawn DAG (issue: 2 s).
EDIT_SHOWN_WITHIN_S = 2.0


def wait_for(what, predicate, timeout=20):
    """Polls `predicate` until it returns a true value (returned), failing after `timeout` s."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            value = predicate()
            if value:
                return value
        except (StaleElementReferenceException, JavascriptException) as e:
            last = e  # the page redrew under the lookup: look again
        time.sleep(0.02)
    raise AssertionError("timed out after %s s waiting for %s (%s)" % (timeout, what, last))


class Stack:
    """redis-server with the demo dataset, the plans compiled from a copy of plans/ by a rankc
    watcher, and rankd serve reloading on each build; all stopped (by PID) in stop()."""

    def __init__(self):
        self.folder = tempfile.mkdtemp(prefix="rankd-studio-browser-")
        self.redis = self.serve = self.watcher = None
        try:
            self.start()
        except BaseException:
            self.stop()
            raise

    def start(self):
        self.redis = RedisServer(self.folder)
        subprocess.run([RANKD, "datagen", "--dataset", "demo", "--redis", self.redis.address(),
                        "--flush"], check=True, stdout=subprocess.DEVNULL)
        self.plans = os.path.join(self.folder, "plans")
        shutil.copytree(os.path.join(SOURCE, "plans"), self.plans,
                        ignore=shutil.ignore_patterns("build"))
        self.store = os.path.join(self.folder, "store")
        rankc = os.path.join(SOURCE, "dsl", "bin", "rankc.js")
        subprocess.run(["node", rankc, "build", self.plans, "--out", self.store], cwd=SOURCE,
                       check=True, stdout=subprocess.DEVNULL)
        address = self.redis.address()
        self.serve_log = open(os.path.join(self.folder, "serve.log"), "w")
        self.serve = subprocess.Popen(
            [RANKD, "serve", "--plans", self.store, "--registry", os.path.join(SOURCE, "registry"),
             "--endpoint", "graph=" + address, "--endpoint", "features=" + address, "--port", "0",
             "--shards", "1", "--log_sample", "0"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        for line in self.serve.stderr:  # its JSON log: the "listening" line names the port
            event = json.loads(line)
            if event.get("event") == "listening":
                self.port = event["port"]
                break
        else:
            raise RuntimeError("rankd serve exited before listening")
        # The rest of its log to a file, so that it never blocks on a full pipe.
        self.copier = subprocess.Popen(["cat"], stdin=self.serve.stderr, stdout=self.serve_log)
        self.url = "http://127.0.0.1:%d" % self.port
        self.watcher_log_path = os.path.join(self.folder, "rankc-watch.log")
        self.watcher_log = open(self.watcher_log_path, "w")
        self.watcher = subprocess.Popen(
            ["node", rankc, "build", self.plans, "--out", self.store, "--watch", "--reload",
             self.url + "/admin/reload"],
            cwd=SOURCE, stdout=self.watcher_log, stderr=subprocess.STDOUT)
        wait_for("rankc's first build report", lambda: self.get("/studio/api/build")["state"] == "ok")

    def get(self, path):
        return json.loads(self.request("GET", path)[1])

    def request(self, method, path, body=None):
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, body=body)
            r = conn.getresponse()
            return r.status, r.read().decode()
        finally:
            conn.close()

    def watcher_output(self):
        with open(self.watcher_log_path) as f:
            return f.read()

    def stop(self):
        for proc in (self.watcher, self.serve):
            if proc and proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if getattr(self, "copier", None):
            self.copier.wait(timeout=15)
        if self.redis:
            self.redis.stop()
        for f in ("serve_log", "watcher_log"):
            if getattr(self, f, None):
                getattr(self, f).close()
        shutil.rmtree(self.folder, ignore_errors=True)


def start_browser():
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 "--window-size=1440,1200", "--force-device-scale-factor=1",
                 "--no-first-run", "--no-default-browser-check", "--disable-extensions"):
        options.add_argument(flag)
    # Debian's driver, named explicitly: nothing is looked up or downloaded.
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


class StudioBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.stack = Stack()
        try:
            cls.browser = start_browser()
        except BaseException:
            cls.stack.stop()
            raise
        cls.browser.set_script_timeout(20)

    @classmethod
    def tearDownClass(cls):
        try:
            errors = [e for e in cls.browser.get_log("browser") if e["level"] == "SEVERE"]
        except Exception:  # noqa: BLE001 - the log is a courtesy
            errors = []
        cls.browser.quit()
        cls.stack.stop()
        if errors:
            raise AssertionError("the page logged errors: %s" % errors)

    # Helpers ---------------------------------------------------------------------------------

    def css(self, selector, within=None):
        return (within or self.browser).find_elements(By.CSS_SELECTOR, selector)

    def one(self, selector):
        found = self.css(selector)
        self.assertEqual(len(found), 1, selector)
        return found[0]

    def open_page(self):
        self.browser.get(self.stack.url + "/studio")
        wait_for("the page to be ready",
                 lambda: self.browser.execute_script("return document.body.dataset.ready") == "1")

    def select_plan(self, name):
        digest = self.stack.get("/plans/" + name)["digest"]
        self.one('#plans li[data-plan="%s"]' % name).click()
        return wait_for("the DAG of %s" % name, lambda: self.css(
            '#dag[data-plan="%s"][data-digest="%s"] svg g.node' % (name, digest)))

    def fill(self, name, value):
        field = self.one('#run-form [name="%s"]' % name)
        field.clear()
        field.send_keys(value)

    def run_request(self):
        before = self.css("#timeline")[0].get_attribute("data-request-id")
        self.one("#run").click()
        return wait_for("the run's timeline", lambda: (
            self.css("#timeline")[0].get_attribute("data-request-id") not in (None, "", before)
            and self.css("#timeline svg g.bar")))

    def shot(self, name, top="body"):
        """A screenshot of the page scrolled to the panel of the element `top` names, into
        SHOTS."""
        if SHOTS:
            os.makedirs(SHOTS, exist_ok=True)
            self.browser.execute_script(
                "(arguments[0].closest('section') || arguments[0]).scrollIntoView({block: 'start'})",
                self.one(top))
            self.browser.save_screenshot(os.path.join(SHOTS, name + ".png"))

    # Tests (run in name order: a to e) ---------------------------------------------------------

    def test_a_every_example_plan_draws_its_dag(self):
        self.open_page()
        names = [p["name"] for p in self.stack.get("/plans")["plans"]]
        self.assertEqual(sorted(li.get_attribute("data-plan") for li in self.css("#plans li")),
                         sorted(names))
        for name in names:
            artifact = self.stack.get("/plans/" + name)
            self.select_plan(name)
            # Each read is retried until it holds: the DAG may redraw under it (the plan's
            # analysis arrives after its artifact), which makes the elements read stale.
            want_nodes = sorted(n["id"] for n in artifact["nodes"])
            want_edges = {(i, n["id"]) for n in artifact["nodes"] for i in n["inputs"]}
            want_fragments = {n["id"].rsplit(".", 1)[0]
                              for n in artifact["nodes"] if "." in n["id"]}
            wait_for("the nodes of %s" % name, lambda: sorted(
                n.get_attribute("data-node") for n in self.css("#dag svg g.node")) == want_nodes)
            wait_for("the edges of %s" % name, lambda: {
                (e.get_attribute("data-from"), e.get_attribute("data-to"))
                for e in self.css("#dag svg path.edge")} == want_edges)
            wait_for("the fragments of %s" % name, lambda: {
                g.get_attribute("data-fragment")
                for g in self.css("#dag svg g.fragment")} == want_fragments)
            if name == "blend":
                self.shot("dag-blend")
        # A node's artifact on click.
        self.select_plan("feed")
        self.one('#dag svg g.node[data-node="score"]').click()
        detail = wait_for("the node's detail", lambda: "final_score" in self.one(
            "#node-detail").text and self.one("#node-detail").text)
        self.assertIn('"out_key"', detail)
        self.shot("dag-feed")

    def test_b_a_run_shows_the_answer_and_a_timeline_of_every_node(self):
        self.open_page()
        self.select_plan("timeouts")
        self.fill("viewer_id", "42")
        bars = self.run_request()
        artifact = self.stack.get("/plans/timeouts")
        statuses = {b.get_attribute("data-node"): b.get_attribute("data-status") for b in bars}
        self.assertEqual(sorted(statuses), sorted(n["id"] for n in artifact["nodes"]))
        # The plan's slow node times out and is skipped on every request (docs/plan-format.md).
        self.assertEqual(statuses["slow_ranker"], "degraded", statuses)
        self.assertEqual({s for n, s in statuses.items() if n != "slow_ranker"}, {"ok"}, statuses)
        self.shot("run-timeline", "#timeline")
        rows = self.css('#answer table[data-output="top"] tbody tr')
        self.assertGreater(len(rows), 0)
        # Rows drawn on the DAG: every node has its count after a run.
        for node in self.css("#dag svg g.node"):
            self.assertRegex(node.get_attribute("data-rows-out") or "", r"^\d+$")
        # The feed's answer in the page is the server's for the same request.
        self.select_plan("feed")
        self.fill("viewer_id", "42")
        self.run_request()
        ids = [r.get_attribute("data-id") for r in self.css('#answer table[data-output="top"] '
                                                             'tbody tr')]
        status, text = self.stack.request("POST", "/rank", '{"plan": "feed", "viewer_id": 42}')
        self.assertEqual(status, 200)
        self.assertEqual(ids, [str(r["id"]) for r in json.loads(text)["outputs"]["top"]])

    def test_c_a_traced_id_shows_the_node_that_removed_it(self):
        self.open_page()
        self.select_plan("blend")
        self.fill("viewer_id", "42")
        self.fill("trace_ids", "9001, 9002")
        self.run_request()
        status, text = self.stack.request(
            "POST", "/rank", '{"plan": "blend", "viewer_id": 42, "trace_ids": [9001]}')
        [trace] = [t for t in json.loads(text)["explain"]["trace"] if t["id"] == 9001]
        self.assertEqual(trace["outcome"], "removed")
        remover = trace["removed_by"][0]["node"]
        entry = wait_for("the trace of 9001", lambda: self.css('#trace [data-trace-id="9001"]'))[0]
        self.assertEqual(entry.get_attribute("data-outcome"), "removed")
        self.assertEqual([e.get_attribute("data-removed-by")
                          for e in self.css("[data-removed-by]", entry)], [remover])
        Select(self.one("#trace-select")).select_by_value("9001")
        wait_for("the trace on the DAG", lambda: self.one(
            '#dag svg g.node[data-node="%s"]' % remover).get_attribute("data-trace") == "removed")
        states = {n.get_attribute("data-node"): n.get_attribute("data-trace")
                  for n in self.css("#dag svg g.node")}
        for node in trace["nodes"]:
            expected = ("removed" if node["node"] == remover else
                        "present" if node["present"] else
                        "unknown" if node["present"] is None else "absent")
            self.assertEqual(states[node["node"]], expected, node)
        self.shot("trace")

    def test_c2_a_64_bit_id_is_shown_and_selected_exactly(self):
        # 2^53 + 1: JSON.parse would read the answer's id as 2^53.
        big = "9007199254740993"
        self.open_page()
        self.select_plan("blend")
        self.fill("viewer_id", "42")
        self.fill("trace_ids", big + ", 9001")
        self.run_request()
        entry = wait_for("the trace of " + big,
                         lambda: self.css('#trace [data-trace-id="%s"]' % big))[0]
        self.assertIn("id " + big, entry.text)
        self.assertEqual(self.css('#trace [data-trace-id="9007199254740992"]'), [])
        Select(self.one("#trace-select")).select_by_value(big)
        wait_for("the selected trace", lambda: "selected" in self.one(
            '#trace [data-trace-id="%s"]' % big).get_attribute("class"))

    def test_c3_a_request_failed_on_its_deadline_is_drawn_with_its_failed_nodes(self):
        # The slow ranker sleeps 80 ms under a 10 ms request deadline: the request fails, and its
        # error answer (which names no plan) still carries explain.
        self.open_page()
        self.select_plan("timeouts")
        self.fill("viewer_id", "2")
        self.fill("deadline_ms", "10")
        self.run_request()
        drawn = wait_for("the run drawn on the DAG", lambda: [
            n for n in self.css("#dag svg g.node") if n.get_attribute("data-status")])
        self.assertTrue(drawn)
        failed = wait_for("a failed node on the timeline", lambda: self.css(
            '#timeline g.bar[data-status="failed"]'))
        for bar in failed:
            label = bar.find_element(By.CSS_SELECTOR, ".bar-label").text
            self.assertNotIn("not run", label)
            self.assertIn("failed", label)
        # The browser logs the 504 it was answered (reading the log empties it); nothing else.
        logged = [e for e in self.browser.get_log("browser") if e["level"] == "SEVERE"]
        self.assertTrue(all(e["source"] == "network" and "/rank" in e["message"] and "504" in e["message"]
                            for e in logged), logged)

    def test_c4_the_page_reads_well(self):
        self.open_page()
        # Wide or tall plans are drawn at a legible scale (a tall one scrolls instead).
        for name in ("blend", "reels"):
            self.select_plan(name)
            scale = wait_for("the DAG of %s drawn" % name, lambda: self.browser.execute_script(
                "const svg = document.querySelector('#dag svg');"
                "return svg ? svg.width.baseVal.value / svg.viewBox.baseVal.width : null;"))
            self.assertGreaterEqual(scale, 0.85, name)
        # A filter's node panel shows its predicate's text, not only its id.
        self.select_plan("feed")
        self.one('#dag svg g.node[data-node="quality"]').click()
        detail = wait_for("the filter's detail", lambda: "predicate p0" in self.one(
            "#node-detail").text and self.one("#node-detail").text)
        self.assertIn("final_score >= $min_score", detail)
        # Numeric columns' headers are aligned with their numbers; an id no node produced leaves
        # the DAG uncoloured.
        self.fill("viewer_id", "42")
        self.fill("trace_ids", "123456789")
        self.run_request()
        entry = wait_for("the trace", lambda: self.css('#trace [data-trace-id="123456789"]'))[0]
        self.assertEqual(entry.get_attribute("data-outcome"), "not_produced")
        self.assertEqual([n.get_attribute("data-node") for n in self.css("#dag svg g.node")
                          if n.get_attribute("data-trace")], [])
        align = {th.text: th.value_of_css_property("text-align")
                 for th in self.css('#answer table[data-output="top"] thead th')}
        self.assertEqual((align["final_score"], align["id"]), ("right", "right"), align)
        self.assertIn(align["title"], ("left", "start"), align)
        # Traced ids belong to the plan they were asked of: another plan's form starts without.
        self.select_plan("blend")
        self.assertEqual(self.one('#run-form [name="trace_ids"]').get_attribute("value"), "")
        # A status tag is drawn whole, inside the timeline (the slow ranker's, at the right edge).
        self.select_plan("timeouts")
        self.fill("viewer_id", "42")
        self.run_request()
        box = self.browser.execute_script(
            "const t = document.querySelector('#timeline g.bar[data-node=\"slow_ranker\"] "
            ".status-tag'); const b = t.getBBox();"
            "return [b.x, b.x + b.width, t.ownerSVGElement.width.baseVal.value, t.textContent];")
        self.assertEqual(box[3], "degraded (timeout)")
        self.assertGreaterEqual(box[0], 0, box)
        self.assertLessEqual(box[1], box[2], box)
        self.shot("readability", "#timeline")

    def test_d_compare_shows_the_servers_diff(self):
        self.open_page()
        self.select_plan("feed")
        self.fill("viewer_id", "42")
        Select(self.one("#compare-plan-b")).select_by_value("feed_fresh")
        self.one("#compare-run").click()
        result = wait_for("the comparison", lambda: [
            e for e in self.css("#compare-result") if e.get_attribute("data-overlap")])[0]
        status, text = self.stack.request("POST", "/studio/api/compare?against=feed_fresh",
                                          '{"plan": "feed", "viewer_id": 42}')
        diff = json.loads(text)["diffs"][0]["diff"]
        self.assertAlmostEqual(float(result.get_attribute("data-overlap")), diff["overlap_at_k"])
        self.assertAlmostEqual(float(result.get_attribute("data-rbo")), diff["rbo"], places=6)
        self.assertGreater(len(self.css('table[data-side="a"] tbody tr', result)), 0)
        self.assertGreater(len(self.css('table[data-side="b"] tbody tr', result)), 0)
        self.shot("compare", "#compare-result")

    def test_e_a_saved_edit_is_redrawn_and_a_compile_error_is_shown(self):
        self.open_page()
        self.select_plan("feed")
        self.fill("viewer_id", "42")
        self.run_request()
        self.assertIsNone(self.one("#answer").get_attribute("data-stale"))
        path = os.path.join(self.stack.plans, "feed.plan.ts")
        with open(path) as f:
            source = f.read()
        old_digest = self.one("#dag").get_attribute("data-digest")
        # An edit: the topk keeps 40 instead of 50, so the plan's digest changes.
        old = 'topk("final_score", 50,'
        self.assertIn(old, source)
        edited = source.replace(old, 'topk("final_score", 40,', 1)
        saved = time.time()
        with open(path, "w") as f:
            f.write(edited)
        wait_for("the edited plan's DAG", lambda: self.one("#dag").get_attribute(
            "data-digest") not in ("", old_digest), timeout=30)
        shown_after = time.time() - saved
        print("studio: a saved edit of feed.plan.ts was redrawn %.2f s after the save"
              % shown_after)
        new_digest = self.stack.get("/plans/feed")["digest"]
        self.assertEqual(self.one("#dag").get_attribute("data-digest"), new_digest)
        self.assertLessEqual(shown_after, EDIT_SHOWN_WITHIN_S)
        # The run of the previous version stays on screen, marked as such; a new run is current.
        for panel in ("#answer", "#timeline", "#trace"):
            wait_for("%s marked stale" % panel,
                     lambda: self.one(panel).get_attribute("data-stale") == "1")
        self.run_request()
        self.assertIsNone(self.one("#answer").get_attribute("data-stale"))
        # A compile error: the page shows it with file:line:col; the served plan stays.
        lines = edited.splitlines(keepends=True)
        broken_line = next(i for i, line in enumerate(lines) if 'topk("final_score", 40,' in line)
        lines[broken_line] = lines[broken_line].replace('"final_score"', '"final_scor"')
        with open(path, "w") as f:
            f.write("".join(lines))
        banner = wait_for("the build error", lambda: [
            e for e in self.css('#build-status[data-state="failed"]')], timeout=30)[0]
        diagnostics = [d.text for d in self.css("li.diagnostic", banner)]
        self.assertTrue(any("feed.plan.ts:%d:" % (broken_line + 1) in d for d in diagnostics),
                        (diagnostics, self.stack.watcher_output()))
        self.assertEqual(self.stack.get("/plans/feed")["digest"], new_digest)
        self.shot("build-error")
        with open(path, "w") as f:
            f.write(source)
        wait_for("the build to pass again", lambda: self.css('#build-status[data-state="ok"]'),
                 timeout=30)
        wait_for("the original plan's DAG", lambda: self.one("#dag").get_attribute(
            "data-digest") == old_digest, timeout=30)


if __name__ == "__main__":
    RANKD, SOURCE = sys.argv[1], sys.argv[2]
    SHOTS = sys.argv[3] if len(sys.argv) > 3 else None
    unittest.main(argv=sys.argv[:1], verbosity=2)
