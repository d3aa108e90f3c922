-- http.lua — tools over mcp.http for tests/integration/io-http.test.mjs.
local mcp = require "mcp"

local any = { type = "object" } -- the arguments pass through as they are

local function response(r)
  return { status = r.status, headers = r.headers, body = r.body, json = r.json, url = r.url }
end

mcp.tool {
  name = "http_request",
  description = "mcp.http.request with the arguments as its options.",
  input = any,
  handler = function(args) return response(mcp.http.request(args)) end,
}

mcp.tool {
  name = "http_get",
  description = "mcp.http.get(url [, opts]).",
  input = { url = mcp.string {}, opts = mcp.optional(any) },
  handler = function(args) return response(mcp.http.get(args.url, args.opts)) end,
}

mcp.tool {
  name = "http_post",
  description = "mcp.http.post(url, body [, opts]): a string body as is, anything else as JSON.",
  input = { type = "object", properties = { url = { type = "string" }, opts = { type = "object" } },
            required = { "url", "body" } },
  handler = function(args) return response(mcp.http.post(args.url, args.body, args.opts)) end,
}

mcp.tool {
  name = "http_status",
  description = "GET url: \"STATUS LENGTH\" (a small result for load tests and big bodies).",
  input = { url = mcp.string {}, opts = mcp.optional(any) },
  handler = function(args)
    local r = mcp.http.get(args.url, args.opts)
    return r.status .. " " .. #r.body
  end,
}

mcp.tool {
  name = "http_pcall",
  description = "mcp.http.request under pcall: the error message as the result.",
  input = any,
  handler = function(args)
    local ok, err = pcall(mcp.http.request, args)
    return ok and "no error" or tostring(err)
  end,
}

mcp.tool {
  name = "http_misuse",
  description = "mcp.http called where it cannot wait, or with bad options.",
  input = { case = mcp.string {}, url = mcp.string {} },
  handler = function(args)
    if args.case == "coroutine" then
      local co = coroutine.wrap(function() return mcp.http.get(args.url) end)
      return co()
    elseif args.case == "gsub" then
      return (string.gsub("x", "x", function() return mcp.http.get(args.url).body end))
    elseif args.case == "unknown_option" then
      return mcp.http.request { url = args.url, tiemout = 1 }
    elseif args.case == "bad_header" then
      return mcp.http.request { url = args.url, headers = { ["X-A"] = "a\r\nX-Injected: 1" } }
    end
  end,
}
