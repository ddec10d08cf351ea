// The plans list in the sidebar (#plans): name, short digest and load time per plan; a click
// selects the plan.

import type { PlanList } from "../model/api_types.js";
import { formatTimestamp, shortDigest } from "../model/format.js";
import { h, replaceChildren } from "./dom.js";

export function renderPlans(list: HTMLElement, plans: PlanList, selected: string | null, onSelect: (name: string) => void): void {
  const items = plans.plans.map((plan) => {
    const item = h("li", { "data-plan": plan.name, "data-digest": plan.digest, class: plan.name === selected ? "selected" : null, tabindex: 0, title: plan.digest },
      h("span", { class: "plan-name" }, plan.name),
      h("span", { class: "plan-digest" }, shortDigest(plan.digest)),
      h("span", { class: "plan-loaded" }, formatTimestamp(plan.loaded_at)));
    item.addEventListener("click", () => onSelect(plan.name));
    item.addEventListener("keydown", (event) => {
      if (event.key === "Enter") onSelect(plan.name);
    });
    return item;
  });
  replaceChildren(list, ...items);
}

/** Moves the `selected` class to `name`'s item. */
export function markSelectedPlan(list: HTMLElement, name: string | null): void {
  for (const item of list.querySelectorAll<HTMLLIElement>("li[data-plan]")) {
    item.classList.toggle("selected", item.dataset["plan"] === name);
  }
}
