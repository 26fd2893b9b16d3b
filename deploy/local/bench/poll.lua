-- POST /version/v1/testresult for one registered token (BENCH_TOKEN): a session read plus a call to
-- test-result-service per request.
local body = '{"registrationToken":"' .. os.getenv("BENCH_TOKEN") .. '"}'

request = function()
  return wrk.format("POST", "/version/v1/testresult", { ["Content-Type"] = "application/json" }, body)
end
