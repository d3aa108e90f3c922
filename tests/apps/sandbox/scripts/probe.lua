-- probe.lua — escapes for tests/integration/sandbox.test.mjs. Each probe
-- tries one thing an app under --sandbox must not do (or one it still may)
-- and the tool answers "ok: <what came back>" or "refused: <the error>".
-- The test runs every probe with and without --sandbox, in a copy of this
-- folder with an app.lua it writes (its permissions name the test's ports)
-- next to a folder `outside` the app must not reach. Probes call what they
-- test directly, so an error names this file's line.
local mcp = require "mcp"

local function slurp(f)
  local text = f:read("a")
  f:close()
  return text
end

local function http_status(r) return r.status .. " " .. r.body end

local probes = {}

-- {====== processes
probes.os_execute = function() return os.execute("true") end
probes.io_popen = function() return slurp(io.popen("echo popen-ran")) end
probes.os_exit = function() return os.exit(3) end -- run under --sandbox only (it would end the server)
probes.package_loaded_io_popen = function() return slurp(package.loaded.io.popen("echo popen-ran")) end
probes.g_os_execute = function() return package.loaded._G.os.execute("true") end
-- }======

-- {====== C code and the debug library
probes.loadlib = function() return package.loadlib("libc.so.6", "*") end
probes.require_c_module = function() return type(require "socket.core") end
probes.require_system_module = function() return type(require "socket") end
probes.c_searcher = function() return type(package.searchers[3]) .. " " .. type(package.searchers[4]) end
probes.debug_getinfo = function() return debug.getinfo(1, "S").short_src end
probes.debug_getupvalue = function() return debug.getupvalue(mcp.tool, 1) end
probes.debug_getregistry = function() return type(debug.getregistry()) end
probes.loaded_debug = function() return type(package.loaded.debug.getlocal(1, 1)) end
probes.string_dump = function() return #string.dump(function() end) end
probes.string_meta_dump = function() return #getmetatable("").__index.dump(function() end) end
probes.debug_traceback = function() return (debug.traceback("tb"):match("^tb\nstack traceback:")) end
-- }======

-- {====== files (args.outside: a folder next to the app's, holding secret.txt and evil.lua)
probes.open_absolute = function(a) return slurp(io.open(a.outside .. "/secret.txt")) end
probes.open_dotdot = function(a) return slurp(io.open(mcp.path.app() .. "/../outside/secret.txt")) end
probes.open_symlink = function(a) return slurp(io.open(mcp.path.app("link-out.txt"))) end
probes.open_inside = function(a) return #slurp(io.open(mcp.path.app("scripts/probe.lua"))) > 0 end
probes.open_missing_inside = function(a) return select(2, io.open(mcp.path.app("no-such-file"))) end
local function touch(p, mode) assert(io.open(p, mode or "a")):close() return true end
probes.write_app_lua = function(a) return touch(mcp.path.app("app.lua")) end
probes.write_script = function(a) return touch(mcp.path.app("scripts/new.lua"), "w") end
probes.write_data = function(a)
  local f = assert(io.open(mcp.path.app("data/note.txt"), "w"))
  f:write("noted")
  f:close()
  return slurp(io.open(mcp.path.app("data/note.txt")))
end
probes.write_data_symlink_dir = function(a) return touch(mcp.path.app("data/out/new.txt"), "w") end
probes.write_data_dangling = function(a) return touch(mcp.path.app("data/dangling"), "w") end
probes.lines_outside = function(a) return io.lines(a.outside .. "/secret.txt")() end
probes.input_outside = function(a)
  io.input(a.outside .. "/secret.txt")
  local line = io.read("l")
  io.input(io.stdin)
  return line
end
probes.output_outside = function(a)
  io.output(a.outside .. "/written.txt")
  io.write("x")
  io.close()
  io.output(io.stdout)
  return true
end
probes.remove_outside = function(a) return os.remove(a.outside .. "/victim.txt") end
probes.rename_outside = function(a) return os.rename(a.outside .. "/movable.txt", mcp.path.app("data/moved.txt")) end
probes.remove_data = function(a)
  assert(io.open(mcp.path.app("data/scratch.txt"), "w")):close()
  return os.remove(mcp.path.app("data/scratch.txt"))
end
probes.tmpname = function() local n = os.tmpname() os.remove(n) return type(n) end
probes.tmpfile = function() return io.type(io.tmpfile()) end
probes.loadfile_outside = function(a) return loadfile(a.outside .. "/evil.lua")() end
probes.dofile_outside = function(a) return dofile(a.outside .. "/evil.lua") end
probes.require_outside = function(a)
  package.path = a.outside .. "/?.lua;" .. package.path
  return require "evil"
end
probes.require_symlink = function() return require "escape" end -- lib/escape.lua -> outside/evil.lua
probes.require_inside = function() return require("helper").answer end
probes.searchpath_outside = function(a) return package.searchpath("secret", a.outside .. "/?.txt") end
probes.searchpath_inside = function() return (package.searchpath("helper", package.path):match("lib/helper%.lua$")) end
probes.setvbuf = function() return io.stdout:setvbuf("no") end
-- }======

-- {====== the environment (the test sets LUAMCP_SANDBOX_SECRET and LUAMCP_SANDBOX_VISIBLE)
probes.getenv_secret = function() return os.getenv("LUAMCP_SANDBOX_SECRET") end
probes.getenv_declared = function() return os.getenv("LUAMCP_SANDBOX_VISIBLE") end
probes.setlocale = function() return os.setlocale("C") end
probes.os_time = function() return math.type(os.time()) end
-- }======

-- {====== mcp.exec (app.lua declares "date" and "env")
probes.exec_declared = function() return mcp.exec { "date", "+%Y" }.code end
probes.exec_undeclared = function() return mcp.exec { "echo", "ran" }.stdout end
probes.exec_by_path = function() return mcp.exec { "/bin/date" }.code end
probes.exec_child_env = function()
  local out = "\n" .. mcp.exec { "env" }.stdout
  return (out:find("LUAMCP_SANDBOX_SECRET=", 1, true) and "secret" or "no-secret") .. " " ..
         (out:find("LUAMCP_SANDBOX_VISIBLE=", 1, true) and "visible" or "no-visible") .. " " ..
         (out:find("\nPATH=", 1, true) and "path" or "no-path")
end
probes.exec_ld_preload = function() return mcp.exec { "date", env = { LD_PRELOAD = "/nonexistent.so" } }.code end
probes.exec_cwd_outside = function(a) return mcp.exec { "date", cwd = a.outside }.code end
probes.exec_cwd_inside = function() return mcp.exec { "date", cwd = mcp.path.app("data") }.code end
-- }======

-- {====== mcp.http (app.lua declares http://127.0.0.1:PORT/allowed/)
local function url(a, p) return ("http://127.0.0.1:%d%s"):format(a.port, p) end
probes.http_declared = function(a) return http_status(mcp.http.get(url(a, "/allowed/hello"))) end
probes.http_undeclared = function(a) return http_status(mcp.http.get(url(a, "/other"))) end
probes.http_redirect_out = function(a) return http_status(mcp.http.get(url(a, "/allowed/redirect"))) end
probes.http_redirect_in = function(a) return http_status(mcp.http.get(url(a, "/allowed/redirect-in"))) end
probes.http_dotdot = function(a) return http_status(mcp.http.get(url(a, "/allowed/../other"))) end
probes.http_userinfo = function(a) return http_status(mcp.http.get(("http://127.0.0.1:%d@127.0.0.1:%d/allowed/hello"):format(a.port, a.port2))) end
-- }======

-- {====== mcp.socket (app.lua declares 127.0.0.1:PORT; PORT2 is another listener)
probes.socket_declared = function(a)
  local s = assert(mcp.socket.connect("127.0.0.1", a.port))
  s:close()
  return true
end
probes.socket_unix_undeclared = function(a) return mcp.socket.unix():connect(a.outside .. "/no.sock") end
probes.socket_undeclared = function(a)
  local s = assert(mcp.socket.connect("127.0.0.1", a.port2))
  s:close()
  return true
end
-- }======

mcp.tool {
  name = "probe",
  description = "Runs one probe; answers ok: <value> or refused: <error>.",
  input = { name = mcp.string(), outside = mcp.string(), port = mcp.integer(), port2 = mcp.integer() },
  handler = function(args)
    local probe = probes[args.name]
    if not probe then return mcp.fail("no probe " .. args.name) end
    local ok, v = pcall(probe, args)
    return (ok and "ok: " or "refused: ") .. tostring(v)
  end,
}

mcp.tool {
  name = "probes",
  description = "The names of the probes.",
  handler = function()
    local names = {}
    for k in pairs(probes) do names[#names + 1] = k end
    table.sort(names)
    return table.concat(names, " ")
  end,
}
