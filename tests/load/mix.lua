-- mix.lua - wrk script for the sustained mixed load of load.sh.
-- Each request carries X-Request-Id "<kind>-<k>" (the daemon echoes it), so
-- every response is checked against its own request's exact answer, worked
-- out here from the inputs (closed forms), never from earlier output:
--   a  float32 ReduceL2 of [3k, 4k]                -> 5k
--   b  int64 ReduceSumSquare of [[k,k+1,k+2],[k+3,k+4,k+5]] over axis 1
--   c  float64 ReduceSumSquare of 1..2000 (18 kB)  -> 2000*2001*4001/6
--   e  malformed JSON                              -> 400 BAD_JSON
--   f  axis 5 of a rank-1 tensor                   -> 400 AXIS_OUT_OF_RANGE
-- Environment: MIX (default "aabcef": one letter per slot of the cycle).
local threads = {}
local MIX = os.getenv("MIX") or "aabcef"

function setup(thread)
  thread:set("tid", #threads)
  table.insert(threads, thread)
end

local big
local function body_c()
  if big == nil then
    local t = {}
    for i = 1, 2000 do t[i] = tostring(i) end
    big = '{"op":"ReduceSumSquare","keepdims":0,"input":{"dtype":"float64","data":[' ..
          table.concat(t, ",") .. ']}}'
  end
  return big
end

function init(args)
  n, ok, wrong, bad_status, unknown = 0, 0, 0, 0, 0
  per = {}
  first_wrong = ""
end

local function req(kind, k)
  local b
  if kind == "a" then
    b = string.format('{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","data":[%d,%d]}}', 3 * k, 4 * k)
  elseif kind == "b" then
    b = string.format('{"op":"ReduceSumSquare","axes":[1],"keepdims":0,"input":{"dtype":"int64","shape":[2,3],"data":[%d,%d,%d,%d,%d,%d]}}',
                      k, k + 1, k + 2, k + 3, k + 4, k + 5)
  elseif kind == "c" then
    b = body_c()
  elseif kind == "e" then
    b = '{"op":"ReduceL2","input":{"dtype":"float32","data":[1,2,'
  else
    b = '{"op":"ReduceL2","axes":[5],"input":{"dtype":"float32","data":[1,2]}}'
  end
  return wrk.format("POST", "/v1/reduce",
    { ["Content-Type"] = "application/json", ["X-Request-Id"] = kind .. "-" .. k }, b)
end

function request()
  n = n + 1
  local slot = (n - 1) % #MIX + 1
  local k = (tid * 7919 + n) % 100000 + 1
  return req(MIX:sub(slot, slot), k)
end

local function data_of(body)
  local d = body:match('"data":%[([^%]]*)%]')
  if d == nil then return nil end
  local out = {}
  for x in d:gmatch("[^,]+") do table.insert(out, tonumber(x)) end
  return out
end

local function expect(kind, k)
  if kind == "a" then return 200, { 5 * k } end
  if kind == "b" then
    return 200, { k*k + (k+1)*(k+1) + (k+2)*(k+2), (k+3)*(k+3) + (k+4)*(k+4) + (k+5)*(k+5) }
  end
  if kind == "c" then return 200, { 2668667000 } end
  if kind == "e" then return 400, "BAD_JSON" end
  return 400, "AXIS_OUT_OF_RANGE"
end

function response(status, headers, body)
  local id = headers["X-Request-Id"] or headers["x-request-id"] or ""
  local kind, k = id:match("^(%a)%-(%d+)$")
  if kind == nil then unknown = unknown + 1; return end
  k = tonumber(k)
  local key = kind .. ":" .. status
  per[key] = (per[key] or 0) + 1
  local est, exp = expect(kind, k)
  if status ~= est then bad_status = bad_status + 1; return end
  local good
  if type(exp) == "string" then
    good = body:find('"code":"' .. exp .. '"', 1, true) ~= nil
  else
    local got = data_of(body)
    good = got ~= nil and #got == #exp
    if good then for i = 1, #exp do if got[i] ~= exp[i] then good = false end end end
  end
  if good then ok = ok + 1
  else
    wrong = wrong + 1
    if first_wrong == "" then first_wrong = id .. ": " .. body:sub(1, 200) end
  end
end

function done(summary, latency, requests)
  local t = { ok = 0, wrong = 0, bad_status = 0, unknown = 0 }
  local per_all, fw = {}, ""
  for _, th in ipairs(threads) do
    for _, f in ipairs({ "ok", "wrong", "bad_status", "unknown" }) do t[f] = t[f] + th:get(f) end
    for key, v in pairs(th:get("per")) do per_all[key] = (per_all[key] or 0) + v end
    if fw == "" then fw = th:get("first_wrong") end
  end
  local keys = {}
  for key in pairs(per_all) do table.insert(keys, key) end
  table.sort(keys)
  local parts = {}
  for _, key in ipairs(keys) do table.insert(parts, key .. "=" .. per_all[key]) end
  local e = summary.errors
  io.write(string.format("MIX responses=%d checked_ok=%d wrong=%d unexpected_status=%d unknown_id=%d\n",
    summary.requests, t.ok, t.wrong, t.bad_status, t.unknown))
  io.write(string.format("MIX socket_errors connect=%d read=%d write=%d timeout=%d non2xx3xx=%d\n",
    e.connect, e.read, e.write, e.timeout, e.status))
  io.write("MIX by_kind_status " .. table.concat(parts, " ") .. "\n")
  io.write(string.format("MIX latency_ms p50=%.2f p99=%.2f max=%.2f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
  if fw ~= "" then io.write("MIX first_wrong " .. fw .. "\n") end
end
