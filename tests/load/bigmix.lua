-- bigmix.lua - wrk script of the queue phase of load.sh (issue 13): many
-- keep-alive clients mixing small JSON and 1-16 MiB raw bodies.  Every
-- answer is checked against its request's exact answer, worked out here:
--   a  JSON float32 ReduceL2 of [3k, 4k]                  -> 5k
--   R  raw float32, n = 1, 2, 4, 8, 12 or 16 MiB / 4 elements, all 1.0
--      (0x3f800000), ReduceSumSquare over axis 0, answered as JSON
--      (Accept)                                           -> n (exact:
--      every partial sum is an integer below 2^24)
-- Environment: BIGMIX (default "aaaaaaaR": one letter per slot of the
-- cycle).  Prints "BIGMIX ..." summary lines (answers, 5xx, wrong,
-- latency p50/p99).
local threads = {}
local MIX = os.getenv("BIGMIX") or "aaaaaaaR"
local MIB = { 1, 2, 4, 8, 12, 16 }
local ONE = "\0\0\128\63"   -- float32 1.0, little-endian

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local raw = {}

function init(args)
  n, ok, wrong, bad_status, fivexx, unknown = 0, 0, 0, 0, 0, 0
  first_wrong = ""
  -- The raw requests are built once per thread (up to 16 MiB each).
  for i, m in ipairs(MIB) do
    local count = m * 262144
    raw[i] = wrk.format("POST",
      "/v1/reduce?op=ReduceSumSquare&dtype=float32&shape=" .. count .. "&axes=0",
      { ["Content-Type"] = "application/octet-stream",
        ["Accept"] = "application/json", ["X-Request-Id"] = "R-" .. i },
      string.rep(ONE, count))
  end
end

function request()
  n = n + 1
  local slot = (n - 1) % #MIX + 1
  local k = (tid * 7919 + n) % 100000 + 1
  if MIX:sub(slot, slot) == "R" then
    return raw[(tid + math.floor(n / #MIX)) % #MIB + 1]
  end
  return wrk.format("POST", "/v1/reduce",
    { ["Content-Type"] = "application/json", ["X-Request-Id"] = "a-" .. k },
    '{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","data":[' ..
    3 * k .. ',' .. 4 * k .. ']}}')
end

local function header(headers, name)
  name = name:lower()
  for key, v in pairs(headers) do
    if key:lower() == name then return v end
  end
  return nil
end

function response(status, headers, body)
  local id = header(headers, "X-Request-Id") or ""
  local kind, k = id:match("^(%a)%-(%d+)$")
  if status >= 500 then fivexx = fivexx + 1 end
  if kind == nil then unknown = unknown + 1; return end
  k = tonumber(k)
  if status ~= 200 then bad_status = bad_status + 1; return end
  -- The one output element, compared as a number: the daemon prints the
  -- shortest form that reads back to the float32 (10000 is "1e+4").
  local want, shape, got
  if kind == "a" then
    want, shape = 5 * k, '"output":{"dtype":"float32","shape":[],"data":['
  else
    want, shape = MIB[k] * 262144, '"output":{"dtype":"float32","shape":[1],"data":['
  end
  got = body:match('"data":%[([^%]]+)%]}')
  if body:find(shape, 1, true) and got and tonumber(got) == want then
    ok = ok + 1
  else
    wrong = wrong + 1
    if first_wrong == "" then first_wrong = id .. ": " .. body:sub(1, 200) end
  end
end

function done(summary, latency, requests)
  local t = { ok = 0, wrong = 0, bad_status = 0, fivexx = 0, unknown = 0 }
  local fw = ""
  for _, th in ipairs(threads) do
    for f in pairs(t) do t[f] = t[f] + th:get(f) end
    if fw == "" then fw = th:get("first_wrong") end
  end
  local e = summary.errors
  io.write(string.format("BIGMIX answers=%d exact=%d wrong=%d non200=%d 5xx=%d unknown_id=%d\n",
    summary.requests, t.ok, t.wrong, t.bad_status, t.fivexx, t.unknown))
  io.write(string.format("BIGMIX socket_errors connect=%d read=%d write=%d timeout=%d\n",
    e.connect, e.read, e.write, e.timeout))
  io.write(string.format("BIGMIX latency_ms p50=%.1f p99=%.1f max=%.1f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
  if fw ~= "" then io.write("BIGMIX first_wrong " .. fw .. "\n") end
end
