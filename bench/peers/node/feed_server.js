#!/usr/bin/env node
// The plan-serving benchmark's Node peer: the `feed` plan (plans/feed.plan.ts) written by hand
// as a team would without rankd, on fastify and ioredis with automatic pipelining. It reads the
// same Redis data with the same commands and answers POST /rank with the same JSON as
// `rankd serve`, so the benchmark compares equal work (bench/scripts/plan_bench.py checks the
// rankings match before timing).
//
//   node feed_server.js --redis HOST:PORT [--port 0] [--workers N] [--digest HEX]
//
// Prints `LISTENING <port>` once every worker accepts; SIGTERM stops it. With --workers N > 1
// the primary forks N workers sharing the port (node:cluster), one process per core as Node
// services are deployed.
"use strict";

const cluster = require("node:cluster");
const Fastify = require("fastify");
const Redis = require("ioredis");

function parseArgs(argv) {
  const args = { redis: null, port: 0, workers: 1, digest: "" };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) throw new Error(`${flag} needs a value`);
    if (flag === "--redis") args.redis = value;
    else if (flag === "--port") args.port = Number(value);
    else if (flag === "--workers") args.workers = Number(value);
    else if (flag === "--digest") args.digest = value;
    else throw new Error(`unknown flag ${flag}`);
  }
  if (!args.redis) throw new Error("--redis HOST:PORT is required");
  if (!Number.isInteger(args.port) || !Number.isInteger(args.workers) || args.workers < 1) {
    throw new Error("--port and --workers take integers");
  }
  return args;
}

// The plan's params and their bounds (plans/feed.plan.ts, registry/params.toml).
const PARAMS = {
  like_weight: { value: 0.5, min: 0, max: 100 },
  recency_weight: { value: 0.05, min: 0, max: 10 },
  min_score: { value: 0.0, min: -1000, max: 1000 },
  blocklist_regex: { value: "[^\\s\\S]" },
};
const FOLLOW_FANOUT = 100;
const MEDIA_FANOUT = 10;
const TOP_K = 50;
const FEATURES = ["author_id", "age_hours", "likes", "ctr", "title"];

// Redis text as the registry's types (docs/engine.md, "Values from Redis"); null when it does not
// parse.
const INT = /^-?\d{1,19}$/;
const FLOAT = /^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;
function parseInt64(text) {
  if (text === null || !INT.test(text)) return null;
  const n = Number(text);
  return Math.abs(n) <= Number.MAX_SAFE_INTEGER ? n : null;  // the dataset's ints are small
}
function parseFloat64(text) {
  if (text === null || !FLOAT.test(text)) return null;
  const n = Number(text);
  return Number.isFinite(n) ? n : null;
}
// List elements that are not ints are dropped.
function ids(list) {
  const out = [];
  for (const text of list) {
    const id = parseInt64(text);
    if (id !== null) out.push(id);
  }
  return out;
}

class BadRequest extends Error {}

function bindParams(overrides) {
  const values = {};
  for (const [name, spec] of Object.entries(PARAMS)) values[name] = spec.value;
  if (overrides === undefined) return values;
  if (overrides === null || typeof overrides !== "object" || Array.isArray(overrides)) {
    throw new BadRequest("params must be an object");
  }
  for (const [name, value] of Object.entries(overrides)) {
    const spec = PARAMS[name];
    if (!spec) throw new BadRequest(`unknown param ${name}`);
    if (typeof value !== typeof spec.value) throw new BadRequest(`param ${name} has the wrong type`);
    if (spec.min !== undefined && (value < spec.min || value > spec.max)) {
      throw new BadRequest(`param ${name} is out of bounds`);
    }
    values[name] = value;
  }
  return values;
}

// The plan's regex: RE2 partial match; JavaScript's engine agrees on the patterns used here.
const regexCache = new Map();
function compiled(pattern) {
  let re = regexCache.get(pattern);
  if (!re) {
    re = new RegExp(pattern, "u");
    regexCache.set(pattern, re);
  }
  return re;
}

async function rankFeed(redis, viewerId, params) {
  // viewer: the user's hash (its keys are not used by the rest of the plan).
  const [, followList] = await Promise.all([
    redis.hgetall(`user:${viewerId}`),
    redis.lrange(`follow:${viewerId}`, 0, FOLLOW_FANOUT - 1),
  ]);
  const followees = ids(followList);
  // follow hydrates each followee's hash; media reads each followee's recent media.
  const [, mediaLists] = await Promise.all([
    Promise.all(followees.map((f) => redis.hgetall(`user:${f}`))),
    Promise.all(followees.map((f) => redis.lrange(`media:${f}`, 0, MEDIA_FANOUT - 1))),
  ]);
  const media = mediaLists.flatMap(ids);
  const features = await Promise.all(media.map((m) => redis.hmget(`media_features:${m}`, ...FEATURES)));

  // score, quality filter, top 50 by final_score (ties keep their order).
  const blocklist = compiled(params.blocklist_regex);
  const rows = [];
  for (let i = 0; i < media.length; i++) {
    const [author, age, likes, ctr, title] = features[i];
    const row = {
      id: media[i],
      author_id: parseInt64(author),
      age_hours: parseFloat64(age),
      likes: parseInt64(likes),
      ctr: parseFloat64(ctr),
      title: title,
      final_score: null,
    };
    let score = (row.ctr ?? 0) + params.like_weight * Math.log1p(row.likes ?? 0);
    score -= params.recency_weight * (row.age_hours ?? 0);
    row.final_score = Number.isFinite(score) ? score : null;
    // A null comparison or regex is not true: such rows are filtered out.
    if (row.final_score === null || !(row.final_score >= params.min_score)) continue;
    if (row.title === null || blocklist.test(row.title)) continue;
    rows.push(row);
  }
  const order = rows.map((row, i) => i);
  order.sort((a, b) => rows[b].final_score - rows[a].final_score || a - b);
  return order.slice(0, TOP_K).map((i) => rows[i]);
}

async function serve(args) {
  const [host, port] = args.redis.split(":");
  const redis = new Redis({ host, port: Number(port), enableAutoPipelining: true, lazyConnect: true });
  await redis.connect();
  const app = Fastify({ logger: false });
  let requests = 0;
  app.post("/rank", async (request, reply) => {
    const body = request.body;
    const requestId =
      body && typeof body.request_id === "string" ? body.request_id : `node-${++requests}`;
    try {
      if (!body || typeof body !== "object") throw new BadRequest("the body is not a JSON object");
      if (body.plan !== "feed") {
        reply.code(404);
        return { request_id: requestId, error: { code: "unknown_plan", message: `no plan ${body.plan}` } };
      }
      if (!Number.isSafeInteger(body.viewer_id) || body.viewer_id < 0) {
        throw new BadRequest("viewer_id must be a non-negative integer");
      }
      const params = bindParams(body.params);
      const top = await rankFeed(redis, body.viewer_id, params);
      return { request_id: requestId, plan: "feed", plan_digest: args.digest, outputs: { top }, degraded: [] };
    } catch (e) {
      if (e instanceof BadRequest) {
        reply.code(400);
        return { request_id: requestId, error: { code: "bad_request", message: e.message } };
      }
      reply.code(502);
      return { request_id: requestId, error: { code: "upstream_error", message: String(e.message) } };
    }
  });
  await app.listen({ host: "127.0.0.1", port: args.port });
  const stop = async () => {
    await app.close();
    redis.disconnect();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  return app.server.address().port;
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.workers === 1) {
    const port = await serve(args);
    process.stdout.write(`LISTENING ${port}\n`);
    return;
  }
  if (cluster.isPrimary) {
    // Workers share one port: the primary picks a free one first when asked for port 0.
    if (args.port === 0) {
      const probe = require("node:net").createServer();
      await new Promise((resolve) => probe.listen(0, "127.0.0.1", resolve));
      args.port = probe.address().port;
      await new Promise((resolve) => probe.close(resolve));
    }
    let listening = 0;
    for (let i = 0; i < args.workers; i++) {
      const worker = cluster.fork({ FEED_PORT: String(args.port) });
      worker.on("message", (m) => {
        if (m === "listening" && ++listening === args.workers) process.stdout.write(`LISTENING ${args.port}\n`);
      });
      worker.on("exit", (code) => {
        if (!stopping) {
          process.stderr.write(`worker exited with ${code}\n`);
          process.exit(1);
        }
      });
    }
    let stopping = false;
    const stop = () => {
      stopping = true;
      for (const worker of Object.values(cluster.workers)) worker.process.kill("SIGTERM");
      setTimeout(() => process.exit(0), 200);
    };
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  } else {
    args.port = Number(process.env.FEED_PORT);
    await serve(args);
    process.send("listening");
  }
}

main().catch((e) => {
  process.stderr.write(`feed_server: ${e.message}\n`);
  process.exit(2);
});
