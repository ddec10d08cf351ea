// The JSON the plan studio reads from rankd: GET /plans, GET /plans/{name}, the /studio/api/*
// answers, POST /rank responses (with explain and trace) and the OpenAPI request schemas. A plan
// artifact is typed by the DSL's own plan format types (dsl/src/authoring/json.ts); of the other
// answers only the members the studio uses are typed, and everything else passes through untouched.

import type { PlanJson } from "@rankd/dsl/plan-format";

export interface PlanListEntry {
  name: string;
  digest: string;
  loaded_at: string;
}

export interface PlanList {
  registry_digest: string;
  loaded_at: string;
  plans: PlanListEntry[];
}

/** GET /plans/{name}: a compiled plan artifact, which always carries its digest. */
export type PlanArtifact = PlanJson & { digest: string };

/** GET /studio/api/plan/{name}: the engine's analysis of a plan, per node. */
export interface NodeAnalysis {
  id: string;
  output_keys: string[];
  keys_added: string[];
  max_rows: number;
  max_redis_commands: number;
}

export interface PlanAnalysis {
  name: string;
  digest: string;
  nodes: NodeAnalysis[];
}

export type NodeStatus = "ok" | "degraded" | "failed" | "not_run";

export interface ExplainNode {
  node: string;
  op: string;
  status: NodeStatus;
  reason?: "timeout" | "error";
  start_us: number;
  end_us: number;
  rows_in: number;
  rows_out: number;
  redis_commands: number;
  round_trips: number;
  reply_bytes?: number;
  unparsable_values?: number;
  ran_on?: "loop" | "pool";
  cpu_us?: number;
  cache_hits?: number;
  cache_misses?: number;
  shared?: boolean;
  saved_redis_commands?: number;
}

export interface TraceNode {
  node: string;
  present: boolean | null;
  rank?: number;
  values?: Record<string, unknown>;
}

export type TraceOutcome = "returned" | "removed" | "not_returned" | "not_produced";

export interface Trace {
  /** A 64-bit id: a bigint beyond 2^53 (model/json_exact.ts). */
  id: number | bigint;
  outcome: TraceOutcome;
  outputs: { node: string; rank: number }[];
  removed_by: { node: string; op: string; why: string }[];
  nodes: TraceNode[];
}

export interface Explain {
  nodes: ExplainNode[];
  totals: {
    redis_commands: number;
    round_trips: number;
    cpu_us: number;
    elapsed_us: number;
    shared_nodes?: number;
    saved_redis_commands?: number;
  };
  trace?: Trace[];
}

export interface ErrorDetail {
  code: string;
  message: string;
  [member: string]: unknown;
}

export interface Degraded {
  node: string;
  reason: "timeout" | "error";
  message: string;
}

export type Row = Record<string, unknown>;

/** A POST /rank answer: a ranking, or an error (which may still carry an explain). */
export interface RankResponse {
  request_id?: string;
  plan?: string;
  plan_digest?: string;
  outputs?: Record<string, Row[]>;
  degraded?: Degraded[];
  explain?: Explain;
  error?: ErrorDetail;
}

/** docs/experiments.md, "The ranking diff", JSON form. */
export interface DiffItem {
  /** A 64-bit id: a bigint beyond 2^53 (model/json_exact.ts). */
  id: number | bigint;
  rank_a: number;
  rank_b: number;
  rank_change: number;
  score_a?: number | null;
  score_b?: number | null;
  score_change?: number | null;
}

export interface DiffOnly {
  /** A 64-bit id: a bigint beyond 2^53 (model/json_exact.ts). */
  id: number | bigint;
  rank: number;
  score?: number | null;
}

export interface RankingDiff {
  k: number;
  rbo_p?: number;
  size_a: number;
  size_b: number;
  common: number;
  overlap_at_k: number;
  rbo: number;
  kendall_tau: number | null;
  only_in_a: DiffOnly[];
  only_in_b: DiffOnly[];
  items: DiffItem[];
}

/** POST /studio/api/compare?against=B&k=K: the request answered by its plan (A) and by B, and the ranking diff of each pair of outputs (by position); a pair whose rows could not be diffed has `error`. */
export interface CompareResponse {
  against?: string;
  k?: number;
  a?: RankResponse;
  b?: RankResponse;
  diffs?: { output_a: string; output_b: string; diff?: RankingDiff; error?: string }[];
  error?: ErrorDetail;
}

export interface BuildDiagnostic {
  file: string;
  line: number;
  column: number;
  code?: string;
  message: string;
}

export interface BuildStatus {
  state: "ok" | "failed" | "none";
  at: string | null;
  diagnostics: BuildDiagnostic[];
}

/** A JSON Schema property as the OpenAPI document writes request members. */
export interface SchemaProperty {
  type?: string | string[];
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  default?: unknown;
  description?: string;
  format?: string;
  "x-max-bytes"?: number;
  items?: SchemaProperty;
  properties?: Record<string, SchemaProperty>;
  required?: string[];
  const?: unknown;
}

export interface OpenApiDocument {
  components?: { schemas?: Record<string, SchemaProperty> };
  [member: string]: unknown;
}
