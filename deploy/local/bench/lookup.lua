-- wrk script: POST verification lookups; IDS_KNOWN (default 1000) ids repeat, so most lookups hit existing rows.
-- BENCH_SERVICE_TOKEN is verification-service's service token for test-result-service (deploy/local/dev-jwt.sh service).
local known = tonumber(os.getenv("IDS_KNOWN") or "1000")
local headers = { ["Content-Type"] = "application/json", ["X-CWA-Service-Token"] = os.getenv("BENCH_SERVICE_TOKEN") or "" }

function init(args)
  math.randomseed(os.time() + (tonumber(tostring({}):sub(8), 16) or 0))
end

request = function()
  local id = string.format("%064x", math.random(1, known))
  return wrk.format("POST", "/api/v1/app/result", headers, '{"id":"' .. id .. '"}')
end
