// The server calls the studio makes, all same-origin with relative URLs. Each answers the
// parsed JSON body with the HTTP status, or a message when the request or the JSON failed.

import type {
  BuildStatus, CompareResponse, OpenApiDocument, PlanAnalysis, PlanArtifact, PlanList, RankResponse,
} from "../model/api_types.js";
import { parseJsonExact } from "../model/json_exact.js";

export type ApiResult<T> = { ok: true; status: number; body: T } | { ok: false; status: number; body: T | null; message: string };

function errorMessage(body: unknown, status: number): string {
  const error = (body as { error?: { code?: string; message?: string } } | null)?.error;
  if (error && typeof error === "object") return `${error.code ?? "error"}: ${error.message ?? ""}`.trim();
  return `HTTP ${status}`;
}

/**
 * `exact`: read the answer with parseJsonExact (ranked answers and their diffs, whose ids are
 * 64-bit); else JSON.parse (plans, analyses, the OpenAPI document: no ids, and int64 bounds the
 * run form reads from their decimal digits).
 */
async function request<T>(url: string, init?: RequestInit, exact = false): Promise<ApiResult<T>> {
  let response: Response;
  try {
    response = await fetch(url, { cache: "no-store", ...init });
  } catch (error) {
    return { ok: false, status: 0, body: null, message: `cannot reach the server: ${(error as Error).message}` };
  }
  let body: T | null = null;
  try {
    // Ids are 64-bit: read exactly (an integer beyond 2^53 is a bigint), not as JSON.parse rounds them.
    const text = await response.text();
    body = (exact ? parseJsonExact(text) : JSON.parse(text)) as T;
  } catch {
    return { ok: false, status: response.status, body: null, message: `HTTP ${response.status}: the answer is not JSON` };
  }
  if (!response.ok || (body !== null && typeof body === "object" && "error" in body)) {
    return { ok: false, status: response.status, body, message: errorMessage(body, response.status) };
  }
  return { ok: true, status: response.status, body };
}

/** POSTs `json`; the answer is read exactly (ranked answers). */
function postJson<T>(url: string, json: string): Promise<ApiResult<T>> {
  return request<T>(url, { method: "POST", headers: { "Content-Type": "application/json" }, body: json }, true);
}

const planPath = (name: string): string => encodeURIComponent(name);

export const api = {
  plans: () => request<PlanList>("/plans"),
  plan: (name: string) => request<PlanArtifact>(`/plans/${planPath(name)}`),
  analysis: (name: string) => request<PlanAnalysis>(`/studio/api/plan/${planPath(name)}`),
  openapi: () => request<OpenApiDocument>("/openapi.json"),
  build: () => request<BuildStatus>("/studio/api/build"),
  rank: (json: string) => postJson<RankResponse>("/rank", json),
  /** The request `json` answered by the plan it names (A) and by `against` (B), and their diff. */
  compare: (json: string, against: string, k: number) =>
    postJson<CompareResponse>(`/studio/api/compare?against=${encodeURIComponent(against)}&k=${k}`, json),
};
