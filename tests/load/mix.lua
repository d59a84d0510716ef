-- mix.lua - wrk script for the sustained mixed load of load.sh.
-- Each request carries X-Request-Id "<kind>-<k>" (the daemon echoes it), so
-- every response is checked against its own request's exact answer, worked
-- out here from the inputs (closed forms), never from earlier output.
-- JSON bodies:
--   a  float32 ReduceL2 of [3k, 4k]                -> 5k
--   b  int64 ReduceSumSquare of [[k,k+1,k+2],[k+3,k+4,k+5]] over axis 1
--   c  float64 ReduceSumSquare of 1..2000 (18 kB)  -> 2000*2001*4001/6
--   e  malformed JSON                              -> 400 BAD_JSON
--   f  axis 5 of a rank-1 tensor                   -> 400 AXIS_OUT_OF_RANGE
-- Binary bodies (bytes written here from the IEEE 754 and .npy format
-- definitions; binary answers compared byte for byte, headers included):
--   g  raw float32 [[3k,4k],[5k,12k]], ReduceL2 over axis 1, answered raw
--      (Accept prefers octet-stream)          -> float32 LE 5k, 13k
--   h  .npy <i4 (2,3) C order, m = k % 20000: [[m,-(m+1),m+2],
--      [-(m+3),m+4,-(m+5)]], ReduceSumSquare opset 13 over axis 1,
--      answered as JSON (Accept)              -> int32 [sum, sum]
--   i  .npy 2.0 >f8 (2,3) Fortran order: [[k+.5,k+1.5,k+2.5],
--      [-2k,-(2k+1),-(2k+2)]], ReduceSumSquare over axis 0, answered .npy
--      (Accept)                               -> .npy 1.0 <f8 (3,)
--   j  raw with axes=5 for shape 2            -> 400 AXIS_OUT_OF_RANGE
--   k  a pickle sent as .npy                  -> 400 BAD_NPY
-- Environment: MIX (default "aabcefgghijk": one letter per slot of the
-- cycle).
-- Names of the kinds in the summary.
local NAMES = {
  a = "json_f32", b = "json_i64", c = "json_f64_18kB", e = "json_malformed",
  f = "json_bad_axis", g = "raw_f32>raw", h = "npy_i32>json",
  i = "npy_f64be_fortran>npy", j = "raw_bad_axis", k = "npy_pickle",
}
local threads = {}
local MIX = os.getenv("MIX") or "aabcefgghijk"

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

-- Little-endian bytes of an integer 0 <= v < 2^(8n), n <= 4.
local function le_uint(v, n)
  local t = {}
  for i = 1, n do t[i] = string.char(v % 256); v = math.floor(v / 256) end
  return table.concat(t)
end

local function le_int32(v)
  if v < 0 then v = v + 2^32 end   -- two's complement
  return le_uint(v, 4)
end

-- IEEE 754 binary32 (n = 4) or binary64 (n = 8), little-endian, of a v
-- that is 0 or a normal number exactly representable in that format.
local function le_float(v, n)
  local mbits, bias = n == 4 and 23 or 52, n == 4 and 127 or 1023
  local sign, e, m = 0, 0, 0
  if v < 0 then sign, v = 1, -v end
  if v ~= 0 then
    local f, ex = math.frexp(v)   -- v = f * 2^ex, 0.5 <= f < 1
    e, m = ex - 1 + bias, (2 * f - 1) * 2^mbits
    assert(m == math.floor(m) and e > 0 and e < 2 * bias + 1, "mix.lua: inexact " .. v)
  end
  if n == 4 then return le_uint(sign * 2^31 + e * 2^23 + m, 4) end
  return le_uint(m % 2^32, 4) .. le_uint(sign * 2^31 + e * 2^20 + math.floor(m / 2^32), 4)
end

-- A .npy header as numpy's format document defines it: magic, version,
-- little-endian header length (2 bytes for 1.0, 4 for 2.0), the dict,
-- spaces and '\n' up to a multiple of 64 bytes.
local function npy_header(major, dict)
  local pre = 8 + (major == 1 and 2 or 4)
  local total = math.ceil((pre + #dict + 1) / 64) * 64
  return "\147NUMPY" .. string.char(major, 0) .. le_uint(total - pre, pre - 8) ..
         dict .. string.rep(" ", total - pre - #dict - 1) .. "\n"
end

local function h_values(k)   -- kind h, row-major
  local m = k % 20000
  return { m, -(m + 1), m + 2, -(m + 3), m + 4, -(m + 5) }
end
local function i_value(k, r, c)   -- kind i, logical [r][c]
  if r == 0 then return k + c + 0.5 end
  return -(2 * k + c)
end

local JSON = "application/json"
local OCT, NPY = "application/octet-stream", "application/x-npy"

local function req(kind, k)
  local b, path, hdr = nil, "/v1/reduce", { ["Content-Type"] = JSON }
  if kind == "a" then
    b = string.format('{"op":"ReduceL2","keepdims":0,"input":{"dtype":"float32","data":[%d,%d]}}', 3 * k, 4 * k)
  elseif kind == "b" then
    b = string.format('{"op":"ReduceSumSquare","axes":[1],"keepdims":0,"input":{"dtype":"int64","shape":[2,3],"data":[%d,%d,%d,%d,%d,%d]}}',
                      k, k + 1, k + 2, k + 3, k + 4, k + 5)
  elseif kind == "c" then
    b = body_c()
  elseif kind == "e" then
    b = '{"op":"ReduceL2","input":{"dtype":"float32","data":[1,2,'
  elseif kind == "f" then
    b = '{"op":"ReduceL2","axes":[5],"input":{"dtype":"float32","data":[1,2]}}'
  elseif kind == "g" then
    path = path .. "?op=ReduceL2&dtype=float32&shape=2,2&axes=1&keepdims=0"
    hdr = { ["Content-Type"] = OCT, ["Accept"] = JSON .. ";q=0.5, " .. OCT }
    b = le_float(3 * k, 4) .. le_float(4 * k, 4) .. le_float(5 * k, 4) .. le_float(12 * k, 4)
  elseif kind == "h" then
    path = path .. "?op=ReduceSumSquare&opset=13&axes=1&keepdims=false"
    hdr = { ["Content-Type"] = NPY, ["Accept"] = JSON }
    local t = { npy_header(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 3), }") }
    for _, v in ipairs(h_values(k)) do table.insert(t, le_int32(v)) end
    b = table.concat(t)
  elseif kind == "i" then
    path = path .. "?op=ReduceSumSquare&axes=0&keepdims=0"
    hdr = { ["Content-Type"] = NPY, ["Accept"] = NPY }
    local t = { npy_header(2, '{"descr": ">f8", "fortran_order": True, "shape": (2, 3)}') }
    for c = 0, 2 do
      for r = 0, 1 do table.insert(t, le_float(i_value(k, r, c), 8):reverse()) end
    end
    b = table.concat(t)
  elseif kind == "j" then
    path = path .. "?op=ReduceL2&dtype=float32&shape=2&axes=5"
    hdr = { ["Content-Type"] = OCT }
    b = le_float(1, 4) .. le_float(2, 4)
  else
    path = path .. "?op=ReduceL2"
    hdr = { ["Content-Type"] = NPY }
    b = "\128\004K\005."   -- pickle.dumps(5, protocol=4)
  end
  hdr["X-Request-Id"] = kind .. "-" .. k
  return wrk.format("POST", path, hdr, b)
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

-- The expected answer: status, then { code = error code } or
-- { dtype =, data = {...} } (a JSON answer) or { ctype =, dtype =, shape =,
-- bytes = } (a binary answer, compared byte for byte).
local function expect(kind, k)
  if kind == "a" then return 200, { dtype = "float32", data = { 5 * k } } end
  if kind == "b" then
    return 200, { dtype = "int64", data = { k*k + (k+1)*(k+1) + (k+2)*(k+2), (k+3)*(k+3) + (k+4)*(k+4) + (k+5)*(k+5) } }
  end
  if kind == "c" then return 200, { dtype = "float64", data = { 2668667000 } } end
  if kind == "e" then return 400, { code = "BAD_JSON" } end
  if kind == "f" or kind == "j" then return 400, { code = "AXIS_OUT_OF_RANGE" } end
  if kind == "g" then
    return 200, { ctype = OCT, dtype = "float32", shape = "[2]",
                  bytes = le_float(5 * k, 4) .. le_float(13 * k, 4) }
  end
  if kind == "h" then
    local v = h_values(k)
    return 200, { dtype = "int32", data = { v[1]*v[1] + v[2]*v[2] + v[3]*v[3], v[4]*v[4] + v[5]*v[5] + v[6]*v[6] } }
  end
  if kind == "i" then
    local t = { npy_header(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }") }
    for c = 0, 2 do
      local x, y = i_value(k, 0, c), i_value(k, 1, c)
      table.insert(t, le_float(x * x + y * y, 8))
    end
    return 200, { ctype = NPY, dtype = "float64", shape = "[3]", bytes = table.concat(t) }
  end
  return 400, { code = "BAD_NPY" }
end

local function header(headers, name)
  name = name:lower()
  for key, v in pairs(headers) do
    if key:lower() == name then return v end
  end
  return nil
end

local function matches(exp, headers, body)
  if exp.code ~= nil then
    return body:find('"code":"' .. exp.code .. '"', 1, true) ~= nil
  end
  if exp.bytes ~= nil then
    return body == exp.bytes and header(headers, "Content-Type") == exp.ctype and
           header(headers, "Tensor-Dtype") == exp.dtype and
           header(headers, "Tensor-Shape") == exp.shape
  end
  if body:find('"output":{"dtype":"' .. exp.dtype .. '"', 1, true) == nil then return false end
  local got = data_of(body)
  if got == nil or #got ~= #exp.data then return false end
  for i = 1, #exp.data do if got[i] ~= exp.data[i] then return false end end
  return true
end

function response(status, headers, body)
  local id = header(headers, "X-Request-Id") or ""
  local kind, k = id:match("^(%a)%-(%d+)$")
  if kind == nil then unknown = unknown + 1; return end
  k = tonumber(k)
  local key = kind .. ":" .. status
  per[key] = (per[key] or 0) + 1
  local est, exp = expect(kind, k)
  if status ~= est then bad_status = bad_status + 1; return end
  if matches(exp, headers, body) then ok = ok + 1
  else
    wrong = wrong + 1
    if first_wrong == "" then first_wrong = id .. ": " .. (body:sub(1, 200):gsub("[%c\128-\255]", ".")) end
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
  -- Responses per kind, by name, and the kinds of MIX that got none.
  local kinds, missing = {}, {}
  for slot = 1, #MIX do
    local kind = MIX:sub(slot, slot)
    if kinds[kind] == nil then
      kinds[kind] = 0
      for key, v in pairs(per_all) do
        if key:sub(1, 1) == kind then kinds[kind] = kinds[kind] + v end
      end
      table.insert(kinds, kind)
      if kinds[kind] == 0 then table.insert(missing, kind) end
    end
  end
  table.sort(kinds)
  local byname = {}
  for _, kind in ipairs(kinds) do
    table.insert(byname, (NAMES[kind] or kind) .. "=" .. kinds[kind])
  end
  local e = summary.errors
  io.write(string.format("MIX responses=%d checked_ok=%d wrong=%d unexpected_status=%d unknown_id=%d\n",
    summary.requests, t.ok, t.wrong, t.bad_status, t.unknown))
  io.write(string.format("MIX socket_errors connect=%d read=%d write=%d timeout=%d non2xx3xx=%d\n",
    e.connect, e.read, e.write, e.timeout, e.status))
  io.write("MIX by_kind_status " .. table.concat(parts, " ") .. "\n")
  io.write("MIX by_kind " .. table.concat(byname, " ") .. "\n")
  io.write("MIX kinds_without_response=" .. #missing .. " " .. table.concat(missing, "") .. "\n")
  io.write(string.format("MIX latency_ms p50=%.2f p99=%.2f max=%.2f\n",
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
  if fw ~= "" then io.write("MIX first_wrong " .. fw .. "\n") end
end
