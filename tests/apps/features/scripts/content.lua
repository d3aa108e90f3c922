-- content.lua — every content block type, with annotations and _meta.
local mcp = require "mcp"

local png = "\137PNG\r\n\26\n\0\0\0\rIHDR" -- raw bytes; mcp.image base64-encodes them
local wav = "RIFF\36\0\0\0WAVEfmt "

mcp.tool {
  name = "content_types",
  title = "Every content type",
  description = "Returns one block of each content type",
  icons = { { src = "https://example.org/icon.png", mimeType = "image/png", sizes = { "48x48" } } },
  annotations = { title = "All content", readOnlyHint = true, openWorldHint = false },
  _meta = { ["org.example.luamcp/kind"] = "demo" },
  handler = function()
    return mcp.result {
      content = {
        mcp.text("plain text", { annotations = { audience = { "user" }, priority = 0.5 } }),
        mcp.image(png, "image/png", { _meta = { ["org.example.luamcp/alt"] = "a tiny header" } }),
        mcp.audio(wav, "audio/wav"),
        mcp.link {
          uri = "mcp://test/files/readme.md", name = "readme", title = "Read me",
          description = "A linked file", mimeType = "text/markdown", size = 42,
        },
        mcp.embed {
          uri = "mcp://test/files/notes.txt", text = "embedded text", mimeType = "text/plain",
          annotations = { priority = 1 },
        },
        mcp.embed { uri = "mcp://test/files/blob.bin", blob = "\0\1\2\255", mimeType = "application/octet-stream" },
      },
      _meta = { ["org.example.luamcp/trace"] = "abc123" },
    }
  end,
}
