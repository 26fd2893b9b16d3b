-- wrk script: POST batches of RESULTS_PER_BATCH (default 100) PCR results with random ids.
local per_batch = tonumber(os.getenv("RESULTS_PER_BATCH") or "100")
local hex = "0123456789abcdef"

local function random_id()
  local t = {}
  for i = 1, 64 do
    local n = math.random(1, 16)
    t[i] = hex:sub(n, n)
  end
  return table.concat(t)
end

function init(args)
  math.randomseed(os.time() + (tonumber(tostring({}):sub(8), 16) or 0))
end

request = function()
  local entries = {}
  for i = 1, per_batch do
    entries[i] = string.format('{"id":"%s","result":%d}', random_id(), math.random(1, 3))
  end
  local body = '{"labId":"bench-lab","testResults":[' .. table.concat(entries, ",") .. ']}'
  return wrk.format("POST", "/api/v1/lab/results", { ["Content-Type"] = "application/json" }, body)
end
