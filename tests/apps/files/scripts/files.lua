-- files.lua — templates that name files: one reads docs/ through
-- mcp.path.join, one shows what a read is handed, one backtracks.
local mcp = require "mcp"

local docs = mcp.path.app("docs")

mcp.template {
  uri = "file:///docs/{name}",
  name = "doc",
  mime = "text/plain",
  read = function(p)
    local path = mcp.path.join(docs, p.name) -- nil for "..", "/etc/passwd", NUL
    if not path then return nil end          -- nil: resource not found (-32002)
    local f = io.open(path, "rb")
    if not f then return nil end
    local text = f:read("a")
    f:close()
    return text
  end,
}

-- the value as decoded: "..%2Fsecret.txt" arrives as "../secret.txt"
mcp.template {
  uri = "file:///echo/{name}",
  name = "echo",
  read = function(p) return { name = p.name } end,
}

mcp.template {
  uri = "file:///split/{stem}.{ext}",
  name = "split",
  read = function(p) return { stem = p.stem, ext = p.ext } end,
}

mcp.template {
  uri = "file:///txt/{name}.txt",
  name = "txt",
  read = function(p) return { name = p.name } end,
}

-- mcp.path.join itself: the path, or why it was refused
mcp.tool {
  name = "join",
  input = { base = mcp.string(), rel = mcp.string() },
  handler = function(a)
    local path, err = mcp.path.join(a.base, a.rel)
    return { path = path, error = err }
  end,
}
