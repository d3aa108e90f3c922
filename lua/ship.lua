-- ship.lua — what `luamcp list` and `luamcp pack` read off a loaded app:
-- the listing a person reads, the MCP Bundle's manifest.json and the MCP
-- Registry's server.json. Loaded into the app's own state (cli_client.c,
-- cmd_pack.c) with the mcp module; each function gets the registration
-- table lua/mcp.lua filled (reg) and what app.lua said (info, may be nil).

local mcp = ...
local S = {}
local as_array = mcp.as_array
local UI_MIME = "text/html;profile=mcp-app"
local SKYBRIDGE = "text/html+skybridge"

local function one_line(s, max)
  s = tostring(s or ""):gsub("%s+", " "):gsub("^ ", ""):gsub(" $", "")
  if max and utf8.len(s) and utf8.len(s) > max then
    s = s:sub(1, utf8.offset(s, max) - 1) .. "…"
  end
  return s
end

local function about(def)
  local t, d = def.title, def.description
  if t and d then return one_line(t .. " — " .. d, 100) end
  return one_line(t or d or "", 100)
end

-- {====== luamcp list

function S.list(reg, _, skills)
  local out = {}
  local function section(title, rows)
    out[#out + 1] = ("%s (%d)"):format(title, #rows)
    local w = 0
    for _, r in ipairs(rows) do w = math.max(w, #r[1]) end
    for _, r in ipairs(rows) do
      local line = "  " .. r[1] .. (r[2] ~= "" and (" " .. (" "):rep(w - #r[1]) .. r[2]) or "")
      out[#out + 1] = line
    end
  end
  local tools = {}
  for _, t in ipairs(reg.tools) do
    local notes = {}
    if t.app_only then notes[#notes + 1] = "[app only]" end
    local ui = t.def._meta and t.def._meta.ui and t.def._meta.ui.resourceUri
    if ui then notes[#notes + 1] = "[view " .. ui .. "]" end
    if t.task then notes[#notes + 1] = "[task " .. t.task .. "]" end
    local text = about(t.def)
    if #notes > 0 then text = table.concat(notes, " ") .. (text ~= "" and " " .. text or "") end
    tools[#tools + 1] = { t.name, text }
  end
  local resources, widgets = {}, {}
  for _, r in ipairs(reg.resources) do
    if r.mime == UI_MIME or r.mime == SKYBRIDGE then
      widgets[#widgets + 1] = { r.uri, about(r.def) ~= "" and about(r.def) or (r.def.name or "") }
    else
      local mime = r.mime and ("(" .. r.mime .. ") ") or ""
      resources[#resources + 1] = { r.uri, one_line(mime .. (r.def.name or "") ..
        (about(r.def) ~= "" and " — " .. about(r.def) or "")) }
    end
  end
  local templates = {}
  for _, t in ipairs(reg.templates) do
    templates[#templates + 1] = { t.uri, one_line((t.def.name or "") .. (about(t.def) ~= "" and " — " .. about(t.def) or "")) }
  end
  local prompts = {}
  for _, p in ipairs(reg.prompts) do
    local args = {}
    for _, a in ipairs(p.args) do args[#args + 1] = a.name .. (a.required and "" or "?") end
    prompts[#prompts + 1] = { p.name .. "(" .. table.concat(args, ", ") .. ")", about(p.def) }
  end
  section("tools", tools)
  section("resources", resources)
  section("templates", templates)
  section("prompts", prompts)
  section("widgets", widgets)
  if skills then -- skills/NAME/SKILL.md (core/app/skills.c): shown when the app has some
    local rows = {}
    for _, k in ipairs(skills) do
      rows[#rows + 1] = { k.uri, one_line(("(%d file%s, %d bytes) %s"):format(k.files,
        k.files == 1 and "" or "s", k.bytes, k.description), 100) }
    end
    section("skills", rows)
  end
  return table.concat(out, "\n") .. "\n"
end

-- }======

-- {====== JSON as people read it: two-space indent, keys in order

local function pretty(v, indent)
  indent = indent or ""
  if type(v) ~= "table" or v == mcp.null then return mcp.json.encode(v) end
  local inner = indent .. "  "
  local n, count = #v, 0
  for _ in pairs(v) do count = count + 1 end
  if getmetatable(v) == mcp.array_mt or (n > 0 and count == n) then
    if #v == 0 then return "[]" end
    local items = {}
    for i, x in ipairs(v) do items[i] = inner .. pretty(x, inner) end
    return "[\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "]"
  end
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  if #keys == 0 then return "{}" end
  table.sort(keys)
  local items = {}
  for i, k in ipairs(keys) do items[i] = inner .. mcp.json.encode(k) .. ": " .. pretty(v[k], inner) end
  return "{\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "}"
end

-- }======

-- {====== luamcp pack: manifest.json (MCP Bundle, manifest_version 0.3)

-- "Ada Lovelace <ada@example.com>" -> { name =, email = }
local function author_of(s)
  if not s then return nil end
  local name, email = s:match("^%s*(.-)%s*<([^>]+)>%s*$")
  if name and name ~= "" then return { name = name, email = email } end
  return { name = s }
end

-- ctx: { name =, version =, platform =, binary =, shim = (or nil),
--        glibc =, arch =, libraries = { soname, ... } (when pack bundled them) }
-- Returns the manifest's JSON text; what it had to make up is said on stderr.
function S.manifest(reg, info, ctx)
  info = info or {}
  local warnings = {}
  local env = {}
  local user_config
  for key, e in pairs(info.user_config or {}) do
    user_config = user_config or {}
    local entry = {}
    for k, v in pairs(e) do
      if k ~= "env" then entry[k] = v end
    end
    if type(entry.default) == "table" then as_array(entry.default) end
    user_config[key] = entry
    env[e.env or key:upper()] = "${user_config." .. key .. "}"
  end
  local tools = as_array {}
  for _, t in ipairs(reg.tools) do
    if not t.app_only then -- app-only tools are for views, not the model
      tools[#tools + 1] = { name = t.name, description = t.def.description }
    end
  end
  local prompts = as_array {}
  for _, p in ipairs(reg.prompts) do
    local args = as_array {}
    for _, a in ipairs(p.args) do args[#args + 1] = a.name end
    -- the app makes each prompt's messages (prompts_generated); the manifest
    -- requires a text: the description stands for it
    prompts[#prompts + 1] = { name = p.name, description = p.def.description, arguments = args,
                              text = p.def.description or p.def.title or p.name }
  end
  local author = author_of(info.author)
  if not author then
    author = { name = "unknown" }
    warnings[#warnings + 1] = "app.lua has no author: the manifest says \"unknown\""
  end
  local description = info.description or info.title
  if not description then
    description = ctx.name .. ", an MCP server written in Lua"
    warnings[#warnings + 1] = "app.lua has no description: the manifest says \"" .. description .. "\""
  end
  -- the bundle format has no field for a minimum glibc or a machine: say
  -- them in long_description (people) and _meta (programs)
  local long_description, meta = info.instructions, nil
  if ctx.glibc then
    local runs = ("Runs on Linux %s with glibc %s or newer: the %d shared libraries it needs besides "
      .. "glibc are in the bundle."):format(ctx.arch, ctx.glibc, #ctx.libraries)
    long_description = long_description and (long_description .. "\n\n" .. runs) or runs
    meta = { ["luamcp/bundle"] = { os = ctx.platform, arch = ctx.arch, glibc_min = ctx.glibc,
                                   libraries = as_array(ctx.libraries) } }
  end
  local m = {
    manifest_version = "0.3",
    name = ctx.name,
    display_name = info.title,
    version = ctx.version,
    description = description,
    long_description = long_description,
    author = author,
    license = info.license,
    homepage = info.websiteUrl,
    server = {
      type = "binary",
      entry_point = ctx.binary,
      mcp_config = {
        command = "${__dirname}/" .. ctx.binary,
        args = as_array { "serve", "${__dirname}/app" },
        env = env,
      },
    },
    tools = tools,
    tools_generated = true,
    prompts = prompts,
    prompts_generated = true,
    compatibility = { platforms = as_array { ctx.platform } },
    user_config = user_config,
    _meta = meta,
  }
  if info.registry and info.registry.repository then
    m.repository = { type = "git", url = info.registry.repository }
  end
  for _, w in ipairs(warnings) do io.stderr:write("luamcp: pack: warning: ", w, "\n") end
  return pretty(m) .. "\n"
end

-- }======

-- {====== luamcp pack --server-json: server.json (MCP Registry, 2025-12-11)

S.SERVER_SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

-- ctx: { version =, file = (the .mcpb's name), sha256 =, url = (--url, or nil) }
-- Returns the JSON text, or raises every problem (one per line).
function S.server_json(info, ctx)
  info = info or {}
  local r = info.registry or {}
  local problems = {}
  local name = r.name
  if not name then
    problems[#problems + 1] = "app.lua needs registry = { name = \"io.github.you/app\" } (the registry's reverse-DNS name)"
  elseif not name:match("^[%w.-]+/[%w._-]+$") or not name:match("^[%w-]+%.[%w.-]+/") or #name > 200 then
    problems[#problems + 1] = ("app.lua's registry.name '%s' must be reverse-DNS: NAMESPACE/NAME, the namespace a domain reversed (io.github.you/app)"):format(name)
  end
  local description = info.description
  if not description then
    problems[#problems + 1] = "app.lua needs a description (at most 100 characters) for the registry"
  elseif (utf8.len(description) or #description) > 100 then
    problems[#problems + 1] = ("app.lua's description has %d characters; the registry takes at most 100"):format(utf8.len(description) or #description)
  end
  local url = ctx.url or r.url
  if not url then
    problems[#problems + 1] = "server.json needs the URL the .mcpb is downloaded from: --url, or app.lua's registry.url"
  else
    url = url:gsub("{version}", ctx.version):gsub("{file}", ctx.file)
    if not url:match("^https://[^/]+/.") then
      problems[#problems + 1] = ("the .mcpb's URL '%s' must be https://"):format(url)
    end
  end
  if #problems > 0 then error(table.concat(problems, "\n"), 0) end
  local s = {
    ["$schema"] = S.SERVER_SCHEMA,
    name = name,
    description = description,
    version = ctx.version,
    title = info.title and one_line(info.title, 100) or nil,
    websiteUrl = info.websiteUrl,
    packages = as_array { {
      registryType = "mcpb",
      identifier = url,
      version = ctx.version,
      fileSha256 = ctx.sha256,
      transport = { type = "stdio" },
    } },
  }
  if r.repository then
    s.repository = { url = r.repository, source = r.repository:match("^https://github%.com/") and "github"
      or r.repository:match("^https://gitlab%.com/") and "gitlab" or "git" }
  end
  return pretty(s) .. "\n"
end

-- }======

return S
