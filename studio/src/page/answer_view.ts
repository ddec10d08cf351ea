// The answer (#answer): one table per output of the response, id first then every other key,
// and the degraded nodes the response names.

import type { RankResponse } from "../model/api_types.js";
import { answerColumns, isNumericColumn, rowId } from "../model/answer_table.js";
import { formatCell } from "../model/format.js";
import { h, replaceChildren } from "./dom.js";

export function renderAnswer(target: HTMLElement, response: RankResponse | null): void {
  if (response === null || response.outputs === undefined) {
    replaceChildren(target, h("p", { class: "hint" }, response?.error ? "The request failed: no ranking." : "Run the plan to see its answer."));
    return;
  }
  const sections = Object.entries(response.outputs).map(([output, rows]) => {
    const columns = answerColumns(rows);
    return h("section", { class: "output" },
      h("h3", {}, `${output} `, h("span", { class: "muted" }, `${rows.length} row${rows.length === 1 ? "" : "s"}`)),
      h("div", { class: "table-scroll" },
        h("table", { "data-output": output, class: "rows" },
          h("thead", {}, h("tr", {}, h("th", { class: "rank" }, "#"),
            ...columns.map((c) => h("th", { class: isNumericColumn(rows, c) ? "num" : null }, c)))),
          h("tbody", {}, ...rows.map((row, index) =>
            h("tr", { "data-id": rowId(row) },
              h("td", { class: "rank" }, String(index + 1)),
              ...columns.map((c) => {
                const value = row[c];
                return h("td", { class: typeof value === "number" || typeof value === "bigint" ? "num" : value === null || value === undefined ? "null" : null }, formatCell(value));
              })))))));
  });
  const degraded = response.degraded ?? [];
  replaceChildren(target,
    degraded.length > 0
      ? h("ul", { class: "degraded-list" }, ...degraded.map((d) => h("li", { "data-node": d.node }, `degraded: ${d.node} (${d.reason}): ${d.message}`)))
      : null,
    ...sections);
}
