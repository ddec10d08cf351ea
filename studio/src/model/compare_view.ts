// The compare view of a ranking diff (docs/experiments.md, "The ranking diff"): the metrics, and
// both rankings rebuilt from the diff's common items and only_in lists, each row labelled with
// its rank change between A and B (+n: B ranks it n higher; -n: lower; "=": same; "dropped":
// only in A; "new": only in B).

import type { RankingDiff } from "./api_types.js";
import { formatMetric } from "./format.js";

export type ChangeKind = "up" | "down" | "same" | "new" | "dropped";

export interface CompareRow {
  /** A 64-bit id: a bigint beyond 2^53 (model/json_exact.ts). */
  id: number | bigint;
  rank: number;
  score: number | null;
  /** The rank in the other list, when the other list has the id. */
  otherRank: number | null;
  change: ChangeKind;
  changeLabel: string;
}

export interface CompareMetrics {
  k: number;
  overlapAtK: number;
  rbo: number;
  kendallTau: number | null;
  common: number;
  sizeA: number;
  sizeB: number;
  summary: string;
}

export interface CompareView {
  metrics: CompareMetrics;
  sideA: CompareRow[];
  sideB: CompareRow[];
}

/** The label of a rank change as the tables show it. */
export function changeLabel(rankChange: number): { change: ChangeKind; label: string } {
  if (rankChange > 0) return { change: "up", label: `+${rankChange}` };
  if (rankChange < 0) return { change: "down", label: `${rankChange}` };
  return { change: "same", label: "=" };
}

function score(value: number | null | undefined): number | null {
  return typeof value === "number" && Number.isFinite(value) ? value : null;
}

/** Reads a diff; an older server's `common` list of items is taken for `items`. */
export function buildCompareView(diff: RankingDiff): CompareView {
  const commonMember = (diff as unknown as { common: unknown }).common;
  const items = Array.isArray(diff.items) ? diff.items : Array.isArray(commonMember) ? (commonMember as RankingDiff["items"]) : [];
  const commonCount = typeof commonMember === "number" ? commonMember : items.length;

  const sideA: CompareRow[] = [];
  const sideB: CompareRow[] = [];
  for (const item of items) {
    const { change, label } = changeLabel(item.rank_change);
    sideA.push({ id: item.id, rank: item.rank_a, score: score(item.score_a), otherRank: item.rank_b, change, changeLabel: label });
    sideB.push({ id: item.id, rank: item.rank_b, score: score(item.score_b), otherRank: item.rank_a, change, changeLabel: label });
  }
  for (const only of diff.only_in_a ?? []) {
    sideA.push({ id: only.id, rank: only.rank, score: score(only.score), otherRank: null, change: "dropped", changeLabel: "dropped" });
  }
  for (const only of diff.only_in_b ?? []) {
    sideB.push({ id: only.id, rank: only.rank, score: score(only.score), otherRank: null, change: "new", changeLabel: "new" });
  }
  sideA.sort((x, y) => x.rank - y.rank);
  sideB.sort((x, y) => x.rank - y.rank);

  const metrics: CompareMetrics = {
    k: diff.k,
    overlapAtK: diff.overlap_at_k,
    rbo: diff.rbo,
    kendallTau: diff.kendall_tau ?? null,
    common: commonCount,
    sizeA: diff.size_a ?? sideA.length,
    sizeB: diff.size_b ?? sideB.length,
    summary: `overlap@${diff.k} ${formatMetric(diff.overlap_at_k)}  rbo(${diff.rbo_p ?? 0.9}) ${formatMetric(diff.rbo)}  ` +
      `tau ${formatMetric(diff.kendall_tau)} (${commonCount} common)  only in A: ${(diff.only_in_a ?? []).length}  ` +
      `only in B: ${(diff.only_in_b ?? []).length}`,
  };
  return { metrics, sideA, sideB };
}
