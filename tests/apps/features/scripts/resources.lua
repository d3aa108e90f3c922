-- resources.lua — a text resource, a binary one and a two-variable template.
local mcp = require "mcp"

mcp.resource {
  uri = "mcp://test/hello.txt",
  name = "hello",
  mime = "text/plain",
  text = "hello, resource",
}

mcp.resource {
  uri = "mcp://test/bytes.bin",
  name = "bytes",
  mime = "application/octet-stream",
  read = function() return { blob = "\0\1\2\255" } end,
}

mcp.template {
  uri = "mcp://test/notes/{folder}/{name}",
  name = "note",
  mime = "text/plain",
  read = function(p) return ("note %s in %s"):format(p.name, p.folder) end,
}
