// The compare panel: plan B's select (#compare-plan-b), the metrics of each diffed output pair and
// side-by-side ranking tables with rank change labels (#compare-result).

import type { CompareResponse, PlanList } from "../model/api_types.js";
import { buildCompareView, type CompareRow } from "../model/compare_view.js";
import { formatCell, formatMetric } from "../model/format.js";
import { h, replaceChildren } from "./dom.js";

const MAX_ROWS = 50;

export function renderPlanBOptions(select: HTMLSelectElement, list: PlanList, planA: string | null, planB: string | null): void {
  const others = list.plans.filter((p) => p.name !== planA);
  replaceChildren(select, ...others.map((p) => h("option", { value: p.name }, p.name)));
  if (planB !== null) select.value = planB;
  select.disabled = others.length === 0;
}

function rankTable(side: "a" | "b", plan: string, rows: CompareRow[]): HTMLElement {
  return h("div", { class: "compare-side" },
    h("h4", {}, `${side.toUpperCase()}: ${plan}`),
    h("table", { "data-side": side, class: "rows" },
      h("thead", {}, h("tr", {}, h("th", { class: "rank" }, "#"), h("th", { class: "num" }, "id"), h("th", { class: "num" }, "score"), h("th", {}, side === "a" ? "in B" : "vs A"))),
      h("tbody", {}, ...rows.slice(0, MAX_ROWS).map((row) =>
        h("tr", { "data-id": String(row.id), "data-change": row.change },
          h("td", { class: "rank" }, String(row.rank)),
          h("td", { class: "num" }, String(row.id)),
          h("td", { class: "num" }, row.score === null ? "–" : formatCell(row.score)),
          h("td", { class: `change change-${row.change}`, title: row.otherRank !== null ? `rank ${row.otherRank} in ${side === "a" ? "B" : "A"}` : null },
            row.change === "up" ? `▲ ${row.changeLabel}` : row.change === "down" ? `▼ ${row.changeLabel.slice(1)}` : row.changeLabel))))));
}

export function renderCompareResult(target: HTMLElement, response: CompareResponse | null, planA: string, planB: string, notes: string[]): void {
  delete target.dataset["overlap"];
  delete target.dataset["rbo"];
  delete target.dataset["kendallTau"];
  if (response === null) {
    replaceChildren(target);
    return;
  }
  const diffs = response.diffs ?? [];
  const first = diffs[0]?.diff;
  if (first !== undefined) {
    target.dataset["overlap"] = String(first.overlap_at_k);
    target.dataset["rbo"] = String(first.rbo);
    target.dataset["kendallTau"] = first.kendall_tau === null ? "" : String(first.kendall_tau);
  }
  const sections = diffs.map((entry) => {
    if (entry.diff === undefined) {
      return h("section", { class: "compare-diff", "data-output-a": entry.output_a, "data-output-b": entry.output_b },
        h("h3", {}, `${planA}.${entry.output_a} vs ${planB}.${entry.output_b}`),
        h("p", { class: "run-error" }, `not compared: ${entry.error ?? "no diff"}`));
    }
    const view = buildCompareView(entry.diff);
    const m = view.metrics;
    return h("section", { class: "compare-diff", "data-output-a": entry.output_a, "data-output-b": entry.output_b },
      h("h3", {}, `${planA}.${entry.output_a} vs ${planB}.${entry.output_b}`),
      h("div", { class: "metrics" },
        h("div", { class: "metric" }, h("span", { class: "metric-value" }, formatMetric(m.overlapAtK)), h("span", { class: "metric-name" }, `overlap@${m.k}`)),
        h("div", { class: "metric" }, h("span", { class: "metric-value" }, formatMetric(m.rbo)), h("span", { class: "metric-name" }, "RBO")),
        h("div", { class: "metric" }, h("span", { class: "metric-value" }, formatMetric(m.kendallTau)), h("span", { class: "metric-name" }, "Kendall tau")),
        h("div", { class: "metric" }, h("span", { class: "metric-value" }, `${m.common}`), h("span", { class: "metric-name" }, `common (A ${m.sizeA}, B ${m.sizeB})`))),
      h("div", { class: "compare-tables" }, rankTable("a", planA, view.sideA), rankTable("b", planB, view.sideB)),
      view.sideA.length > MAX_ROWS || view.sideB.length > MAX_ROWS ? h("p", { class: "hint" }, `First ${MAX_ROWS} ranks shown.`) : null);
  });
  replaceChildren(target,
    ...notes.map((note) => h("p", { class: "hint" }, note)),
    diffs.length === 0 ? h("p", { class: "hint" }, "The answers have no outputs to compare.") : null,
    ...sections);
}
