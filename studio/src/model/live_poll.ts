// What changed between two polls of GET /plans (plans added, removed, or with a new digest), and
// which plan the page shows after a change: the selected one while it exists, else the one the
// location hash names, else the first.

import type { PlanList } from "./api_types.js";

export interface PlanListChange {
  added: string[];
  removed: string[];
  changed: { name: string; from: string; to: string }[];
}

export function diffPlanLists(previous: PlanList | null, next: PlanList): PlanListChange {
  const before = new Map((previous?.plans ?? []).map((p) => [p.name, p.digest]));
  const after = new Map(next.plans.map((p) => [p.name, p.digest]));
  const added = [...after.keys()].filter((name) => !before.has(name));
  const removed = [...before.keys()].filter((name) => !after.has(name));
  const changed: PlanListChange["changed"] = [];
  for (const [name, digest] of after) {
    const old = before.get(name);
    if (old !== undefined && old !== digest) changed.push({ name, from: old, to: digest });
  }
  return { added, removed, changed };
}

export function isUnchanged(change: PlanListChange): boolean {
  return change.added.length === 0 && change.removed.length === 0 && change.changed.length === 0;
}

/** The plan to show: `selected` while listed, else `fromHash` when listed, else the first plan. */
export function choosePlan(list: PlanList, selected: string | null, fromHash: string | null): string | null {
  const names = new Set(list.plans.map((p) => p.name));
  if (selected !== null && names.has(selected)) return selected;
  if (fromHash !== null && names.has(fromHash)) return fromHash;
  return list.plans[0]?.name ?? null;
}

/** The plan a location hash names (`#plan=<name>`), or null. */
export function planFromHash(hash: string): string | null {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  for (const part of text.split("&")) {
    const [key, value] = part.split("=", 2);
    if (key === "plan" && value) {
      try {
        return decodeURIComponent(value);
      } catch {
        return null;
      }
    }
  }
  return null;
}

/** The default plan B for a compare: the first plan other than `planA`. */
export function defaultPlanB(list: PlanList, planA: string | null, current: string | null): string | null {
  const others = list.plans.map((p) => p.name).filter((name) => name !== planA);
  if (current !== null && others.includes(current)) return current;
  return others[0] ?? null;
}
