-- wrk script: POST verification lookups; IDS_KNOWN (default 1000) ids repeat, so most lookups hit existing rows.
local known = tonumber(os.getenv("IDS_KNOWN") or "1000")

function init(args)
  math.randomseed(os.time() + (tonumber(tostring({}):sub(8), 16) or 0))
end

request = function()
  local id = string.format("%064x", math.random(1, known))
  return wrk.format("POST", "/api/v1/app/result", { ["Content-Type"] = "application/json" }, '{"id":"' .. id .. '"}')
end
