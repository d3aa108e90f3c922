-- resources.lua — the resources and the template the conformance suite reads.
local mcp = require "mcp"
local fixtures = require "fixtures"

-- resources-list, resources-read-text
mcp.resource {
  uri = "test://static-text",
  name = "static-text",
  title = "Static Text Resource",
  description = "A static text resource for testing",
  mime = "text/plain",
  text = "This is the content of the static text resource.",
}

-- resources-read-binary: the blob is the 1x1 PNG (raw bytes here, base64 on the wire)
mcp.resource {
  uri = "test://static-binary",
  name = "static-binary",
  title = "Static Binary Resource",
  description = "A static binary resource (image) for testing",
  mime = "image/png",
  read = function() return { blob = fixtures.IMG } end,
}

-- resources-subscribe, resources-unsubscribe subscribe to this one
mcp.resource {
  uri = "test://watched-resource",
  name = "watched-resource",
  title = "Watched Resource",
  description = "A resource clients can subscribe to",
  mime = "text/plain",
  text = "Watched resource content",
}

-- resources-templates-read reads test://template/123/data
mcp.template {
  uri = "test://template/{id}/data",
  name = "template",
  title = "Resource Template",
  description = "A resource template with parameter substitution",
  mime = "application/json",
  read = function(params)
    -- written out so the key order matches the reference server's text
    return ('{"id":%s,"templateTest":true,"data":%s}'):format(
      mcp.json.encode(params.id), mcp.json.encode("Data for ID: " .. params.id))
  end,
}
