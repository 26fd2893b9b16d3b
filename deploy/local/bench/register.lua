-- POST /version/v1/registrationToken with a fresh random hashed GUID per request.
local hex = "0123456789abcdef"
local threads = 0

function setup(thread)
  thread:set("id", threads)
  threads = threads + 1
end

function init(args)
  math.randomseed(os.time() * 1000 + id)
end

request = function()
  local digits = {}
  for i = 1, 64 do
    local r = math.random(1, 16)
    digits[i] = hex:sub(r, r)
  end
  local body = '{"key":"' .. table.concat(digits) .. '","keyType":"GUID"}'
  return wrk.format("POST", "/version/v1/registrationToken", { ["Content-Type"] = "application/json" }, body)
end
