local mcp = require "mcp"

mcp.tool {
  name = "whoami",
  description = "ctx.auth as JSON (nil: \"nobody\"), and what writing to it raises.",
  handler = function(_, ctx)
    local a = ctx.auth
    if not a then return "nobody" end
    local claims = {}
    for k, v in pairs(a.claims) do claims[k] = v end
    local _, err = pcall(function() a.claims.sub = "someone else" end)
    return mcp.json.encode {
      subject = a.subject, client_id = a.client_id, issuer = a.issuer, expires = a.expires,
      key = a.key, subject_is_client = a.subject_is_client,
      scopes = table.concat(a.scopes, " "), claims = claims,
      can_read = a:has("files:read"), can_both = a:has("files:read", "files:write"),
      write_error = tostring(err),
    }
  end,
}

mcp.tool {
  name = "read_file", description = "Needs files:read.", scopes = { "files:read" },
  handler = function() return "read" end,
}

mcp.tool {
  name = "write_file", description = "Needs files:read and files:write.",
  scopes = { "files:read", "files:write" },
  handler = function() return "written" end,
}

mcp.resource { uri = "file:///secret.txt", scopes = { "files:read" }, text = "the secret" }

mcp.template {
  uri = "file:///docs/{name}", scopes = { "files:read" },
  read = function(vars) return "doc " .. vars.name end,
}

mcp.prompt { name = "admin_prompt", scopes = { "admin" }, get = function() return "for admins" end }

-- a task (2026-07-28 tasks extension) and a question (a multi round-trip):
-- each bound to the user whose token made it
mcp.tool {
  name = "slow", description = "A task of 0.2 s.", task = "optional",
  handler = function(_, ctx) ctx:sleep(0.2) return "slept" end,
}

mcp.tool {
  name = "ask_name", description = "Asks the user's name.",
  handler = function(_, ctx)
    local r = ctx:elicit { message = "Your name?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } }
    return "hello " .. tostring(r.content and r.content.name)
  end,
}
