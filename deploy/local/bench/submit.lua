-- POST /version/v1/diagnosis-keys, a real submission of 14 random keys (one per day before today) per request,
-- each with the next unused TAN of the file BENCH_TANS (one per line; thread n of BENCH_THREADS takes every
-- n-th). When a thread runs out of TANs it reuses them, and those requests get 403 (wrk's "Non-2xx").
local count = 0

function setup(thread)
  thread:set("id", count)
  count = count + 1
end

local function varint(n)
  local out = {}
  repeat
    local byte = n % 128
    n = math.floor(n / 128)
    if n > 0 then byte = byte + 128 end
    out[#out + 1] = string.char(byte)
  until n == 0
  return table.concat(out)
end

-- A length-delimited field with tag byte `tag`.
local function field(tag, bytes)
  return string.char(tag) .. varint(#bytes) .. bytes
end

local function random_bytes(n)
  local out = {}
  for i = 1, n do out[i] = string.char(math.random(0, 255)) end
  return table.concat(out)
end

function init(args)
  math.randomseed(os.time() * 1000 + id)
  local threads = tonumber(os.getenv("BENCH_THREADS") or "2")
  tans = {}
  local line_number = 0
  for line in io.lines(os.getenv("BENCH_TANS")) do
    if line_number % threads == id then tans[#tans + 1] = line end
    line_number = line_number + 1
  end
  next_tan = 1
  today = math.floor(os.time() / 86400) * 144
end

request = function()
  local parts = {}
  for day = 1, 14 do
    local key = field(10, random_bytes(16)) .. string.char(16) .. varint((day - 1) % 8 + 1)
      .. string.char(24) .. varint(today - day * 144) .. string.char(32) .. varint(144)
    parts[#parts + 1] = field(10, key)
  end
  -- visitedCountries "DE", origin "DE", consentToFederation true, submissionType PCR_TEST.
  local body = table.concat(parts) .. field(26, "DE") .. field(34, "DE") .. string.char(40, 1, 56, 0)
  local tan = tans[next_tan] or tans[1]
  next_tan = next_tan + 1
  return wrk.format("POST", "/version/v1/diagnosis-keys", {
    ["Content-Type"] = "application/x-protobuf",
    ["cwa-fake"] = "0",
    ["cwa-authorization"] = tan,
  }, body)
end
