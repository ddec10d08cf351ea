// The plan studio's entry: loads the plans list, draws the selected plan's DAG, builds the run
// form from the OpenAPI document, runs /rank with explain (answer, timeline, traces), compares two
// plans through /studio/api/compare, and polls /plans and the rankc build status twice a second.

import { exactInteger } from "../model/json_exact.js";
import type { OpenApiDocument, PlanArtifact, PlanList, RankResponse } from "../model/api_types.js";
import { layoutPlanGraph } from "../model/graph_layout.js";
import { choosePlan, defaultPlanB, diffPlanLists, isUnchanged, planFromHash } from "../model/live_poll.js";
import { buildPlanGraph, type PlanGraph, type ReferencedTree } from "../model/plan_graph.js";
import { formFieldsFromSchema, parseRunForm, requestJson, type FormField } from "../model/run_form.js";
import { buildRunOverlay } from "../model/run_overlay.js";
import { buildTraceView, type TraceView } from "../model/trace_view.js";
import { formatTimestamp, shortDigest } from "../model/format.js";
import { renderAnswer } from "./answer_view.js";
import { api } from "./api.js";
import { renderBuildStatus } from "./build_banner.js";
import { renderCompareResult, renderPlanBOptions } from "./compare_panel.js";
import { DagView } from "./dag_view.js";
import { byId, replaceChildren } from "./dom.js";
import { renderNodeDetail } from "./node_detail.js";
import { markSelectedPlan, renderPlans } from "./plans_list.js";
import { readFormValues, renderRunForm, showFieldErrors, showRunError } from "./run_form_view.js";
import { markSelectedTrace, renderTracePanel } from "./trace_panel.js";
import { renderTimeline } from "./timeline_view.js";

const POLL_INTERVAL_MS = 500;

interface StudioState {
  plans: PlanList | null;
  plan: string | null;
  artifact: PlanArtifact | null;
  graph: PlanGraph | null;
  openapi: OpenApiDocument | null;
  fields: FormField[];
  response: RankResponse | null;
  traceId: number | bigint | null;
  /** The plan the shown response was asked of (an error answer does not name it). */
  responsePlan: string | null;
  traceView: TraceView | null;
  node: string | null;
  planB: string | null;
  /** Increases with every plan load, so a late answer for an older one is dropped. */
  loadToken: number;
}

const state: StudioState = {
  plans: null, plan: null, artifact: null, graph: null, openapi: null, fields: [], response: null,
  traceId: null, responsePlan: null, traceView: null, node: null, planB: null, loadToken: 0,
};

const el = {
  plans: byId<HTMLUListElement>("plans"),
  registry: byId("registry"),
  buildStatus: byId("build-status"),
  planTitle: byId("plan-title"),
  dagNote: byId("dag-note"),
  dag: byId("dag"),
  nodeDetail: byId("node-detail"),
  runForm: byId<HTMLFormElement>("run-form"),
  runError: byId("run-error"),
  runStatus: byId("run-status"),
  answer: byId("answer"),
  timeline: byId("timeline"),
  trace: byId("trace"),
  traceSelect: byId<HTMLSelectElement>("trace-select"),
  comparePlanB: byId<HTMLSelectElement>("compare-plan-b"),
  compareK: byId<HTMLInputElement>("compare-k"),
  compareRun: byId<HTMLButtonElement>("compare-run"),
  compareError: byId("compare-error"),
  compareResult: byId("compare-result"),
  connection: byId("connection"),
};

const dag = new DagView(el.dag, (nodeId) => selectNode(nodeId));

function fieldsFor(plan: string): FormField[] {
  const schema = state.openapi?.components?.schemas?.[`RankRequest.${plan}`];
  if (schema === undefined) return formFieldsFromSchema({ properties: {} });
  return formFieldsFromSchema(schema);
}

function showNodeDetail(): void {
  const node = state.graph?.nodes.find((n) => n.id === state.node) ?? null;
  const explained = (state.response?.plan ?? state.responsePlan) === state.plan ? state.response?.explain?.nodes.find((n) => n.node === state.node) ?? null : null;
  const traced = state.node !== null ? state.traceView?.nodes.get(state.node) ?? null : null;
  renderNodeDetail(el.nodeDetail, node, explained, traced);
}

function selectNode(nodeId: string | null): void {
  state.node = nodeId;
  dag.select(nodeId);
  showNodeDetail();
}

function renderPlanList(): void {
  if (state.plans === null) return;
  renderPlans(el.plans, state.plans, state.plan, (name) => selectPlan(name));
  el.registry.textContent = `registry ${shortDigest(state.plans.registry_digest)} · loaded ${formatTimestamp(state.plans.loaded_at)}`;
  state.planB = defaultPlanB(state.plans, state.plan, state.planB);
  renderPlanBOptions(el.comparePlanB, state.plans, state.plan, state.planB);
}

/** The expressions and predicates a node of the drawn plan names. */
function treesOf(nodeId: string): readonly ReferencedTree[] {
  return state.graph?.nodes.find((n) => n.id === nodeId)?.trees ?? [];
}

/** The DAG overlays for the current response and traced id (only for the drawn digest). */
function applyOverlays(): void {
  const response = state.response;
  // An error answer names no plan: it is the plan the page asked (state.responsePlan).
  const current = response !== null && state.graph !== null && (response.plan ?? state.responsePlan) === state.plan &&
    (response.plan_digest === undefined || response.plan_digest === state.graph.digest);
  // A response of the plan's previous version (a live redraw since) stays on screen, marked.
  const stale = response !== null && !current && (response.plan ?? state.responsePlan) === state.plan;
  for (const panel of [el.answer, el.timeline, el.trace]) {
    if (stale) panel.dataset["stale"] = "1";
    else delete panel.dataset["stale"];
  }
  dag.applyRun(current ? buildRunOverlay(response?.explain, response?.degraded) : null);
  const trace = current ? response?.explain?.trace?.find((t) => t.id === state.traceId) : undefined;
  // An id no node of the plan produced has no path: the DAG stays as it is, not all greyed.
  state.traceView = trace !== undefined && trace.outcome !== "not_produced" && state.graph !== null
    ? buildTraceView(trace, state.graph.nodes.map((n) => n.id), state.graph.edges, treesOf)
    : null;
  dag.applyTrace(state.traceView);
}

/** Fetches and draws a plan (its artifact, and the analysis when the server has it). */
async function loadPlan(name: string): Promise<void> {
  const token = ++state.loadToken;
  const [artifact, analysis] = await Promise.all([api.plan(name), api.analysis(name)]);
  if (token !== state.loadToken) return;
  if (!artifact.ok) {
    el.dagNote.textContent = `Cannot load plan ${name}: ${artifact.message}`;
    return;
  }
  const graph = buildPlanGraph(artifact.body, analysis.ok ? analysis.body : null);
  state.artifact = artifact.body;
  state.graph = graph;
  el.planTitle.textContent = `${name} · ${shortDigest(artifact.body.digest)}`;
  el.dagNote.textContent = analysis.ok ? "" : `No engine analysis (${analysis.message}): keys and static cost are not shown.`;
  dag.draw(graph, layoutPlanGraph(graph));
  if (state.node !== null && !graph.nodes.some((n) => n.id === state.node)) state.node = null;
  dag.select(state.node);
  applyOverlays();
  showNodeDetail();
}

function clearRun(): void {
  state.response = null;
  state.traceId = null;
  state.traceView = null;
  renderAnswer(el.answer, null);
  renderTimeline(el.timeline, undefined, null);
  renderTracePanel(el.trace, el.traceSelect, [], null);
  showRunError(el.runError, null);
  el.runStatus.textContent = "";
}

function selectPlan(name: string): void {
  const changed = name !== state.plan;
  state.plan = name;
  if (planFromHash(location.hash) !== name) history.replaceState(null, "", `#plan=${encodeURIComponent(name)}`);
  markSelectedPlan(el.plans, name);
  if (changed) {
    state.node = null;
    clearRun();
    state.fields = fieldsFor(name);
    renderRunForm(el.runForm, state.fields, false);
    renderCompareResult(el.compareResult, null, name, "", []);
    replaceChildren(el.compareError);
    if (state.plans !== null) {
      state.planB = defaultPlanB(state.plans, name, state.planB);
      renderPlanBOptions(el.comparePlanB, state.plans, name, state.planB);
    }
  }
  void loadPlan(name);
}

function showResponse(response: RankResponse): void {
  state.response = response;
  const traces = response.explain?.trace ?? [];
  if (!traces.some((t) => t.id === state.traceId)) state.traceId = traces[0]?.id ?? null;
  renderAnswer(el.answer, response);
  renderTimeline(el.timeline, response.explain, response.request_id ?? null);
  renderTracePanel(el.trace, el.traceSelect, traces, state.traceId, treesOf);
  applyOverlays();
  showNodeDetail();
}

/** Validates the form; shows the errors and answers null when it does not parse. */
function formRequest(): ReturnType<typeof parseRunForm> | null {
  if (state.plan === null) return null;
  const parsed = parseRunForm(state.plan, state.fields, readFormValues(el.runForm));
  showFieldErrors(el.runForm, parsed.ok ? [] : parsed.errors);
  showRunError(el.runError, parsed.ok ? null : parsed.errors.map((e) => e.message));
  return parsed;
}

async function run(): Promise<void> {
  const parsed = formRequest();
  if (parsed === null || !parsed.ok) return;
  const button = byId<HTMLButtonElement>("run");
  button.disabled = true;
  el.runStatus.textContent = "running…";
  const started = performance.now();
  const result = await api.rank(requestJson(parsed.body));
  state.responsePlan = parsed.body.plan;
  button.disabled = false;
  el.runStatus.textContent = `answered in ${Math.round(performance.now() - started)} ms`;
  if (!result.ok) {
    showRunError(el.runError, [`${state.plan}: ${result.message}`]);
    if (result.body !== null) showResponse(result.body);
    return;
  }
  showRunError(el.runError, null);
  showResponse(result.body);
}

async function compare(): Promise<void> {
  replaceChildren(el.compareError);
  const planA = state.plan;
  const planB = el.comparePlanB.value || null;
  if (planA === null || planB === null) {
    el.compareError.textContent = "Pick a plan B: the store has no other plan.";
    return;
  }
  const parsed = formRequest();
  if (parsed === null || !parsed.ok) {
    el.compareError.textContent = "Fix the run form first.";
    return;
  }
  const k = Number(el.compareK.value || "10");
  if (!Number.isInteger(k) || k < 1) {
    el.compareError.textContent = "k must be an integer of at least 1.";
    return;
  }
  // The same request, answered by plan A (the one it names) and by plan B (the server overrides
  // the plan, as a replay does): a param B does not declare is B's invalid_param, shown below.
  const a = { ...parsed.body };
  delete a.trace_ids;
  el.compareRun.disabled = true;
  const result = await api.compare(requestJson(a), planB, k);
  el.compareRun.disabled = false;
  if (!result.ok) {
    el.compareError.textContent = `compare: ${result.message}`;
    renderCompareResult(el.compareResult, null, planA, planB, []);
    return;
  }
  const notes = [result.body.a, result.body.b].flatMap((answer, side) =>
    answer?.error ? [`${side === 0 ? `A (${planA})` : `B (${planB})`}: ${answer.error.code}: ${answer.error.message}`] : []);
  renderCompareResult(el.compareResult, result.body, planA, planB, notes);
}

async function refreshOpenApi(): Promise<void> {
  const result = await api.openapi();
  if (!result.ok) return;
  state.openapi = result.body;
  if (state.plan !== null) {
    const fields = fieldsFor(state.plan);
    if (JSON.stringify(fields) !== JSON.stringify(state.fields)) {
      state.fields = fields;
      renderRunForm(el.runForm, fields, true);
    }
  }
}

let polling = false;

async function poll(): Promise<void> {
  if (polling) return;
  polling = true;
  try {
    const [plans, build] = await Promise.all([api.plans(), api.build()]);
    el.connection.textContent = plans.ok ? "" : `server: ${plans.message}`;
    el.connection.hidden = plans.ok;
    if (build.ok) renderBuildStatus(el.buildStatus, build.body);
    if (!plans.ok) return;
    const change = diffPlanLists(state.plans, plans.body);
    const first = state.plans === null;
    state.plans = plans.body;
    if (first || !isUnchanged(change)) {
      if (!first) await refreshOpenApi();
      const next = choosePlan(plans.body, state.plan, planFromHash(location.hash));
      renderPlanList();
      if (first) document.body.dataset["ready"] = "1";
      if (next !== state.plan && next !== null) selectPlan(next);
      else if (next !== null && change.changed.some((c) => c.name === next)) void loadPlan(next);
      if (next === null) {
        state.plan = null;
        el.planTitle.textContent = "no plans";
      }
    }
  } finally {
    polling = false;
  }
}

async function start(): Promise<void> {
  el.runForm.addEventListener("submit", (event) => {
    event.preventDefault();
    void run();
  });
  el.compareRun.addEventListener("click", () => void compare());
  el.comparePlanB.addEventListener("change", () => {
    state.planB = el.comparePlanB.value || null;
  });
  el.traceSelect.addEventListener("change", () => {
    state.traceId = el.traceSelect.value === "" ? null : exactInteger(el.traceSelect.value);
    markSelectedTrace(el.trace, state.traceId);
    applyOverlays();
    showNodeDetail();
  });
  window.addEventListener("hashchange", () => {
    const name = planFromHash(location.hash);
    if (name !== null && name !== state.plan && state.plans?.plans.some((p) => p.name === name)) selectPlan(name);
  });
  clearRun();
  renderNodeDetail(el.nodeDetail, null, null, null);
  await refreshOpenApi();
  await poll();
  window.setInterval(() => void poll(), POLL_INTERVAL_MS);
}

void start();
