// The trace panel (#trace and #trace-select): per traced id its outcome, the nodes that removed
// it with why, and the outputs with its rank; the select picks the id the DAG colours.

import type { Trace } from "../model/api_types.js";
import { describeOutcome, whyWithTrees, type TreesOf } from "../model/trace_view.js";
import { h, replaceChildren } from "./dom.js";

export function renderTracePanel(panel: HTMLElement, select: HTMLSelectElement, traces: Trace[], selectedId: number | bigint | null, treesOf: TreesOf = () => []): void {
  const options = traces.map((trace) => h("option", { value: String(trace.id) }, `${trace.id} · ${trace.outcome}`));
  replaceChildren(select, h("option", { value: "" }, traces.length > 0 ? "(no id on the DAG)" : "(no traced ids)"), ...options);
  select.value = selectedId !== null && traces.some((t) => t.id === selectedId) ? String(selectedId) : "";
  select.disabled = traces.length === 0;
  if (traces.length === 0) {
    replaceChildren(panel, h("p", { class: "hint" }, "Name ids in trace_ids to see where each one went."));
    return;
  }
  replaceChildren(panel, ...traces.map((trace) =>
    h("div", { class: `trace-entry outcome-${trace.outcome}${trace.id === selectedId ? " selected" : ""}`, "data-trace-id": String(trace.id), "data-outcome": trace.outcome },
      h("h3", {}, `id ${trace.id} `, h("span", { class: `outcome outcome-${trace.outcome}` }, trace.outcome)),
      h("p", {}, describeOutcome(trace)),
      trace.removed_by.length > 0
        ? h("ul", { class: "removed-by" }, ...trace.removed_by.map((r) =>
          h("li", { "data-removed-by": r.node }, h("code", {}, r.node), ` (${r.op}): ${whyWithTrees(r.why, treesOf(r.node))}`)))
        : null,
      trace.outputs.length > 0
        ? h("ul", { class: "trace-outputs" }, ...trace.outputs.map((o) => h("li", { "data-output": o.node }, `output ${o.node}: rank ${o.rank}`)))
        : null)));
}

/** Marks the selected id's entry. */
export function markSelectedTrace(panel: HTMLElement, selectedId: number | bigint | null): void {
  for (const entry of panel.querySelectorAll<HTMLElement>("[data-trace-id]")) {
    entry.classList.toggle("selected", entry.dataset["traceId"] === String(selectedId));
  }
}
