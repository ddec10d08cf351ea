// Tests of the run form model: fields from the OpenAPI request schemas, parsing and validation
// of entered text, the request for another plan, and exact int64 JSON.

import assert from "node:assert/strict";
import { test } from "node:test";
import type { OpenApiDocument } from "../src/model/api_types.js";
import { formFieldsFromSchema, parseRunForm, requestJson } from "../src/model/run_form.js";
import { loadFixture } from "./load_fixture.js";

const openapi = loadFixture<OpenApiDocument>("openapi.json");
const fieldsOf = (plan: string) => formFieldsFromSchema(openapi.components!.schemas![`RankRequest.${plan}`]!);
const feedFields = fieldsOf("feed");
const blendFields = fieldsOf("blend");

test("feed: viewer_id, each param with type, bounds and default, deadline_ms, trace_ids", () => {
  assert.deepEqual(feedFields.map((f) => f.name), [
    "viewer_id", "param:blocklist_regex", "param:like_weight", "param:min_score", "param:recency_weight", "deadline_ms", "trace_ids",
  ]);
  const like = feedFields.find((f) => f.name === "param:like_weight")!;
  assert.deepEqual([like.kind, like.minimum, like.maximum, like.defaultText], ["number", 0, 100, "0.5"]);
  const regex = feedFields.find((f) => f.name === "param:blocklist_regex")!;
  assert.deepEqual([regex.kind, regex.maxBytes, regex.defaultText], ["string", 256, "[^\\s\\S]"]);
  const viewer = feedFields[0]!;
  assert.deepEqual([viewer.kind, viewer.required, viewer.minimum], ["integer", true, 0]);
  const size = blendFields.find((f) => f.name === "param:result_size")!;
  assert.deepEqual([size.kind, size.minimum, size.maximum, size.defaultText], ["integer", 1, 1000, "100"]);
  assert.equal(feedFields.find((f) => f.name === "deadline_ms")!.maximum, 60000);
  assert.equal(feedFields.find((f) => f.name === "trace_ids")!.maxItems, 100);
});

test("defaults are left out of the request; changed params, deadline and trace ids are sent", () => {
  const values = { viewer_id: "7", "param:like_weight": "0.5", "param:min_score": "0", "param:recency_weight": "0.2", "param:blocklist_regex": "[^\\s\\S]", deadline_ms: "250", trace_ids: "1003877, 42 1000005" };
  const parsed = parseRunForm("feed", feedFields, values);
  assert.ok(parsed.ok);
  assert.deepEqual(parsed.body, { plan: "feed", viewer_id: 7, explain: true, deadline_ms: 250, trace_ids: [1003877, 42, 1000005], params: { recency_weight: 0.2 } });
  const minimal = parseRunForm("feed", feedFields, { viewer_id: "1" });
  assert.deepEqual(minimal, { ok: true, body: { plan: "feed", viewer_id: 1, explain: true } });
});

test("every invalid field gets its own message", () => {
  const parsed = parseRunForm("blend", blendFields, {
    viewer_id: "", "param:min_score": "abc", "param:result_size": "1001", deadline_ms: "0", trace_ids: "1, 2, 1",
  });
  assert.equal(parsed.ok, false);
  if (parsed.ok) return;
  assert.deepEqual(parsed.errors, [
    { field: "viewer_id", message: "viewer_id is required" },
    { field: "param:min_score", message: "min_score must be a number" },
    { field: "param:result_size", message: "result_size must be at most 1000" },
    { field: "deadline_ms", message: "deadline_ms must be at least 1" },
    { field: "trace_ids", message: "trace_ids: 1 is named twice" },
  ]);
  const more = parseRunForm("blend", blendFields, { viewer_id: "-1", "param:result_size": "2.5", trace_ids: "x" });
  assert.ok(!more.ok);
  if (more.ok) return;
  assert.deepEqual(more.errors.map((e) => e.message), ["viewer_id must be at least 0", "result_size must be an integer", 'trace_ids: "x" must be an integer']);
});

test("string params are bounded in UTF-8 bytes", () => {
  const parsed = parseRunForm("feed", feedFields, { viewer_id: "1", "param:blocklist_regex": "é".repeat(129) });
  assert.ok(!parsed.ok);
  if (parsed.ok) return;
  assert.deepEqual(parsed.errors, [{ field: "param:blocklist_regex", message: "blocklist_regex is 258 bytes of UTF-8, at most 256 allowed" }]);
});

test("int64 viewer ids and trace ids are kept exactly, up to 2^63 - 1", () => {
  const parsed = parseRunForm("feed", feedFields, { viewer_id: "9223372036854775807", trace_ids: "9007199254740993" });
  assert.ok(parsed.ok);
  if (!parsed.ok) return;
  assert.equal(requestJson(parsed.body), '{"plan":"feed","viewer_id":9223372036854775807,"explain":true,"trace_ids":[9007199254740993]}');
  const over = parseRunForm("feed", feedFields, { viewer_id: "9223372036854775808" });
  assert.ok(!over.ok);
});
