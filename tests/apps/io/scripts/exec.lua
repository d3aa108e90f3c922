-- exec.lua — tools over mcp.exec for tests/integration/io-exec.test.mjs.
-- Each returns the exec result as structured JSON text, so the test sees
-- exactly what the script saw.
local mcp = require "mcp"

mcp.tool {
  name = "exec_run",
  description = "Runs argv with the given options; returns the result table as JSON.",
  input = {
    argv = mcp.array { items = mcp.string {} },
    stdin = mcp.string { optional = true },
    env = mcp.optional { type = "object", additionalProperties = { type = "string" } },
    env_clear = mcp.boolean { optional = true },
    cwd = mcp.string { optional = true },
    timeout = mcp.number { optional = true },
    grace = mcp.number { optional = true },
    max_output = mcp.integer { optional = true },
    summary = mcp.boolean { optional = true, description = "lengths instead of the output" },
  },
  handler = function(args)
    local spec = { stdin = args.stdin, env = args.env, env_clear = args.env_clear, cwd = args.cwd,
                   timeout = args.timeout, grace = args.grace, max_output = args.max_output }
    for i, a in ipairs(args.argv) do spec[i] = a end
    local r = mcp.exec(spec)
    if args.summary then
      r.stdout_len, r.stderr_len = #r.stdout, #r.stderr
      r.stdout, r.stderr = nil, nil
    end
    return mcp.json.encode(r)
  end,
}

mcp.tool {
  name = "exec_sleep",
  description = "Runs `sleep seconds` (no shell).",
  input = { seconds = mcp.number {} },
  handler = function(args)
    local r = mcp.exec { "sleep", tostring(args.seconds) }
    return "slept " .. tostring(r.code)
  end,
}

mcp.tool {
  name = "exec_true",
  description = "Runs `true`.",
  input = {},
  handler = function()
    return tostring(mcp.exec({ "true" }).code)
  end,
}

mcp.tool {
  name = "exec_errors",
  description = "Misuses mcp.exec; returns the messages raised.",
  input = {},
  handler = function()
    local out = {}
    local function try(what, spec)
      local ok, err = pcall(mcp.exec, spec)
      out[what] = ok and "no error" or tostring(err)
    end
    try("enoent", { "no-such-program-luamcp" })
    try("empty", {})
    try("option", { "true", timout = 1 })
    try("cwd", { "true", cwd = "/no/such/dir" })
    try("argv_type", { "echo", {} })
    try("nul", { "echo", "a\0b" })
    try("twice", { "echo", argv = { "echo" } })
    try("argv_hole", { argv = { "echo", [3] = "x" } })
    out.argv_field = mcp.exec({ argv = { "echo", "from", "argv=" }, timeout = 5 }).stdout
    local co = coroutine.wrap(function() return pcall(mcp.exec, { "true" }) end)
    local _, err = co()
    out.coroutine = tostring(err)
    return mcp.json.encode(out)
  end,
}
