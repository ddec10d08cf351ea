#!/usr/bin/env python3
"""The engine benchmark's chart (docs/benchmarks/engine.png) from its recorded JSON:
python3 engine_chart.py docs/benchmarks/engine.json docs/benchmarks/engine.png

Run by bench/scripts/engine_bench.py --record with Debian's python3 and matplotlib."""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

def main(json_path, png_path):
    with open(json_path) as f:
        doc = json.load(f)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4.5))
    sizes = doc["sizes"]
    labels = doc["labels"]  # variant -> label, the VM first (engine_bench.py's)
    for v, label in labels.items():
        ys = [doc["cells"][str(n)][v]["ns_per_row"] for n in sizes]
        ax1.plot(sizes, ys, marker="o", label=label)
    ax1.set_xscale("log")
    ax1.set_yscale("log")
    ax1.set_xlabel("rows")
    ax1.set_ylabel("ns per row (median, lower is better)")
    ax1.set_title("feed score + filter + topk(50), 1 thread")
    ax1.grid(True, which="both", alpha=0.3)
    ax1.legend()
    for other in ("hand", "duckdb", "tree_walk"):
        ys = [doc["cells"][str(n)][other]["ratio"] for n in sizes]
        ax2.plot(sizes, ys, marker="o", label="%s / VM" % labels[other])
    ax2.axhline(1.0, color="grey", lw=0.8)
    ax2.set_xscale("log")
    ax2.set_yscale("log")
    ax2.set_xlabel("rows")
    ax2.set_ylabel("paired time ratio other / VM (> 1: VM faster)")
    ax2.grid(True, which="both", alpha=0.3)
    ax2.legend()
    fig.tight_layout()
    fig.savefig(png_path, dpi=90)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
