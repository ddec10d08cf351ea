"""Facts about the machine recorded next to every benchmark run, and the rewriting of a runner's
marked section of docs/benchmarks.md (shared by the runners in bench/scripts)."""
import json
import os
import platform
import subprocess

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def loadavg():
    try:
        return " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        return "?"


def cpu_jiffies():
    """(steal, total) jiffies of every CPU so far, from the `cpu` line of /proc/stat, or None."""
    try:
        with open("/proc/stat") as f:
            fields = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: already in user/nice]
    return (fields[7] if len(fields) > 7 else 0), sum(fields[:8])


def steal_pct(before, after):
    """CPU steal between two cpu_jiffies() samples, in % of all CPU time then (None if unknown):
    the time the hypervisor ran something else while this VM's CPUs wanted to run."""
    if before is None or after is None or after[1] <= before[1]:
        return None
    return 100.0 * (after[0] - before[0]) / (after[1] - before[1])


def cpu_model():
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def rewrite_docs_section(docs_md, name, section):
    """Replaces the text from `<!-- NAME:begin -->` to `<!-- NAME:end -->` (markers included)
    in docs_md with `section`, which must carry both markers itself."""
    begin, end = "<!-- %s:begin -->" % name, "<!-- %s:end -->" % name
    if not section.startswith(begin) or not section.rstrip().endswith(end):
        raise ValueError("the %s section must start with %s and end with %s" % (name, begin, end))
    if not os.path.exists(docs_md):
        raise SystemExit("%s does not exist" % docs_md)
    with open(docs_md) as f:
        text = f.read()
    b, e = text.find(begin), text.find(end)
    if b < 0 or e < b:
        raise SystemExit("%s lacks the %s ... %s markers" % (docs_md, begin, end))
    text = text[:b] + section.rstrip() + text[e + len(end):]
    with open(docs_md, "w") as f:
        f.write(text)


def git(*args):
    """Output of `git <args>` in the repository ("" when git is missing)."""
    try:
        return subprocess.run(["git", "-C", REPO_ROOT] + list(args), capture_output=True,
                              text=True).stdout.strip()
    except OSError:
        return ""


def save_results(results_dir, name, now, doc, runs):
    """Writes doc plus every run to <results_dir>/<name>-<UTC>.json, prints and returns the path."""
    os.makedirs(results_dir, exist_ok=True)
    path = os.path.join(results_dir, "%s-%s.json" % (name, now.strftime("%Y%m%dT%H%M%SZ")))
    with open(path, "w") as f:
        json.dump(dict(doc, runs=runs), f, indent=1)
    print("\nresults: %s (%.0f s)" % (os.path.relpath(path, REPO_ROOT), doc["meta"]["seconds"]))
    return path


def save_doc_json(docs_dir, name, doc):
    """The recorded summary: <docs_dir>/<name>.json."""
    os.makedirs(docs_dir, exist_ok=True)
    with open(os.path.join(docs_dir, "%s.json" % name), "w") as f:
        json.dump(doc, f, indent=1)
