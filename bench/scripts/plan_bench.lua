-- wrk script of the plan-serving benchmark (bench/scripts/plan_bench.py): POST /rank with the
-- feed plan for viewers spread over the dataset, so concurrent requests are never identical (the
-- closed-loop runs: each connection sends its next request when the last is answered); at the
-- end, the latency percentiles wrk's --latency omits.
--
--   wrk ... -s plan_bench.lua URL -- <users> <deadline_ms>

local users, deadline_ms = 1000, 5000
local threads = {}
local next_thread = 0
local counter = 0
local offset = 0

function setup(thread)
  thread:set("thread_index", next_thread)
  next_thread = next_thread + 1
  table.insert(threads, thread)
end

function init(args)
  users = tonumber(args[1]) or users
  deadline_ms = tonumber(args[2]) or deadline_ms
  -- Each thread walks the viewers from its own place.
  offset = (thread_index or 0) * 7919
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
end

function request()
  counter = counter + 1
  -- A stride co-prime with any dataset size used here spreads consecutive requests.
  local viewer = ((offset + counter * 104729) % users) + 1
  local body = string.format('{"plan":"feed","viewer_id":%d,"deadline_ms":%d}', viewer, deadline_ms)
  return wrk.format(nil, "/rank", nil, body)
end

-- 503s: rankd's admission refusing a request (counted per thread, summed in done()).
shed = 0
function response(status, headers, body)
  if status == 503 then
    shed = shed + 1
  end
end

function done(summary, latency, requests)
  io.write(string.format("PLAN_BENCH_LATENCY_US p50=%d p90=%d p99=%d p999=%d max=%d\n",
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.max))
  local shed_total = 0
  for _, t in ipairs(threads) do
    shed_total = shed_total + (t:get("shed") or 0)
  end
  io.write(string.format("PLAN_BENCH_COUNTS requests=%d non2xx=%d timeouts=%d shed=%d\n",
    summary.requests, summary.errors.status, summary.errors.timeout, shed_total))
end
