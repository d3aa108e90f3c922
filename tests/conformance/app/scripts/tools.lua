-- tools.lua — the tools the conformance suite's server scenarios call.
-- Names, arguments and payloads follow the suite's reference server
-- (@modelcontextprotocol/conformance 0.1.16); the scenario that calls each
-- tool is named above it. The tools only 2026-07-28 scenarios call are in
-- tools_mrtr.lua and tools_tasks.lua (loaded after this file, so that
-- test_simple_text stays the first tool listed: http-header-validation calls
-- the first tool with no arguments).
local mcp = require "mcp"
local fixtures = require "fixtures"

local json = mcp.json

-- tools-call-simple-text (called with no `arguments` at all)
mcp.tool {
  name = "test_simple_text",
  description = "Tests simple text content response",
  handler = function()
    return "This is a simple text response for testing."
  end,
}

-- tools-call-image
mcp.tool {
  name = "test_image_content",
  description = "Tests image content response",
  handler = function()
    return mcp.image(fixtures.IMG, "image/png")
  end,
}

-- tools-call-audio (the mimeType must be exactly audio/wav)
mcp.tool {
  name = "test_audio_content",
  description = "Tests audio content response",
  handler = function()
    return mcp.audio(fixtures.WAV, "audio/wav")
  end,
}

-- tools-call-embedded-resource
mcp.tool {
  name = "test_embedded_resource",
  description = "Tests embedded resource content response",
  handler = function()
    return mcp.embed {
      uri = "test://embedded-resource",
      mimeType = "text/plain",
      text = "This is an embedded resource content.",
    }
  end,
}

-- tools-call-mixed-content: text + image + resource
mcp.tool {
  name = "test_multiple_content_types",
  description = "Tests response with multiple content types (text, image, resource)",
  handler = function()
    return {
      mcp.text("Multiple content types test:"),
      mcp.image(fixtures.IMG, "image/png"),
      mcp.embed {
        uri = "test://mixed-content-resource",
        mimeType = "application/json",
        text = '{"test":"data","value":123}', -- written out: key order is part of the fixture
      },
    }
  end,
}

-- tools-call-with-logging: 3 notifications/message at info, ~50 ms apart,
-- sent while the call runs (they must reach the client on the call's SSE stream)
mcp.tool {
  name = "test_tool_with_logging",
  description = "Tests tool that emits log messages during execution",
  handler = function(_, ctx)
    ctx:info("Tool execution started")
    ctx:sleep(0.05)
    ctx:info("Tool processing data")
    ctx:sleep(0.05)
    ctx:info("Tool execution completed")
    return "Tool with logging executed successfully"
  end,
}

-- tools-call-with-progress: progress 0, 50, 100 of 100, ~50 ms apart; the core
-- echoes the request's progressToken (a number with the SDK client) as sent
mcp.tool {
  name = "test_tool_with_progress",
  description = "Tests tool that reports progress notifications",
  handler = function(_, ctx)
    ctx:progress(0, 100, "Completed step 0 of 100")
    ctx:sleep(0.05)
    ctx:progress(50, 100, "Completed step 50 of 100")
    ctx:sleep(0.05)
    ctx:progress(100, 100, "Completed step 100 of 100")
    return "Tool with progress executed successfully"
  end,
}

-- tools-call-error: a result with isError = true, not a JSON-RPC error
mcp.tool {
  name = "test_error_handling",
  description = "Tests error response handling",
  handler = function()
    return mcp.fail("This tool intentionally returns an error for testing")
  end,
}

-- server-sse-polling (SEP-1699): the suite POSTs this call and reads the SSE
-- stream: it wants a priming event (an `id:` with empty `data:`) first and a
-- `retry:` field; then the server closes the stream while the call still runs
-- and replays the result on the client's GET with Last-Event-ID.
mcp.tool {
  name = "test_reconnection",
  description = "Tests SSE stream disconnection and client reconnection (SEP-1699): "
    .. "the server closes the stream mid-call and sends the result after the "
    .. "client reconnects with Last-Event-ID.",
  handler = function(_, ctx)
    ctx:sleep(0.05)
    ctx:close_stream() -- over HTTP: the client resumes with GET + Last-Event-ID
    ctx:sleep(0.2)
    return "Reconnection test completed successfully. If you received this, "
      .. "the client properly reconnected after stream closure."
  end,
}

-- Text of a sampling result's content: one block or (2025-11-25) a list.
local function content_text(content)
  if type(content) ~= "table" then return nil end
  if content.type then return content.text end
  local parts = {}
  for _, block in ipairs(content) do
    if type(block) == "table" and block.type == "text" then parts[#parts + 1] = block.text end
  end
  return #parts > 0 and table.concat(parts, "\n") or nil
end

-- tools-call-sampling: sampling/createMessage {messages:[user text], maxTokens:100};
-- the client answers in a separate POST while this call waits
mcp.tool {
  name = "test_sampling",
  description = "Tests server-initiated sampling (LLM completion request)",
  input = { prompt = mcp.string { description = "The prompt to send to the LLM" } },
  handler = function(args, ctx)
    local ok, result = pcall(ctx.sample, ctx, {
      messages = mcp.as_array {
        { role = "user", content = { type = "text", text = args.prompt } },
      },
      maxTokens = 100,
    })
    if not ok then return mcp.fail("Sampling not supported or error: %s", tostring(result)) end
    return "LLM response: " .. (content_text(result.content) or "No response")
  end,
}

-- Raw JSON Schemas for elicitation/create: sent as written, so every JSON
-- array is marked (an empty `required` must stay [] and not become {}).
local function elicited(ctx, message, schema)
  local ok, result = pcall(ctx.elicit, ctx, { message = message, requestedSchema = schema })
  if not ok then return nil, tostring(result) end
  return result
end

local function describe(prefix, result)
  return ("%s: action=%s, content=%s"):format(prefix, tostring(result.action),
    json.encode(result.content or {}))
end

-- tools-call-elicitation: the client answers {action:"accept",
-- content:{username:"testuser", email:"test@example.com"}} and checks it
-- against this schema
mcp.tool {
  name = "test_elicitation",
  description = "Tests server-initiated elicitation (user input request)",
  input = { message = mcp.string { description = "The message to show the user" } },
  handler = function(args, ctx)
    local result, err = elicited(ctx, args.message, {
      type = "object",
      properties = {
        username = { type = "string", description = "User's response" },
        email = { type = "string", description = "User's email address" },
      },
      required = mcp.as_array { "username", "email" },
    })
    if not result then return mcp.fail("Elicitation not supported or error: %s", err) end
    return describe("User response", result)
  end,
}

-- elicitation-sep1034-defaults: one field of each primitive type, each with a
-- default; 30 must stay a JSON integer and 95.5 a float
mcp.tool {
  name = "test_elicitation_sep1034_defaults",
  description = "Tests elicitation with default values per SEP-1034",
  handler = function(_, ctx)
    local result, err = elicited(ctx, "Please review and update the form fields with defaults", {
      type = "object",
      properties = {
        name = { type = "string", description = "User name", default = "John Doe" },
        age = { type = "integer", description = "User age", default = 30 },
        score = { type = "number", description = "User score", default = 95.5 },
        status = {
          type = "string",
          description = "User status",
          enum = mcp.as_array { "active", "inactive", "pending" },
          default = "active",
        },
        verified = { type = "boolean", description = "Verification status", default = true },
      },
      required = mcp.as_array {},
    })
    if not result then return mcp.fail("Elicitation not supported or error: %s", err) end
    return describe("Elicitation completed", result)
  end,
}

-- elicitation-sep1330-enums: the five enum shapes of SEP-1330
mcp.tool {
  name = "test_elicitation_sep1330_enums",
  description = "Tests elicitation with enum schema improvements per SEP-1330",
  handler = function(_, ctx)
    local result, err = elicited(ctx, "Please select options from the enum fields", {
      type = "object",
      properties = {
        -- untitled single-select: enum only (no oneOf, no enumNames)
        untitledSingle = {
          type = "string",
          description = "Select one option",
          enum = mcp.as_array { "option1", "option2", "option3" },
        },
        -- titled single-select: oneOf of const/title (no enum)
        titledSingle = {
          type = "string",
          description = "Select one option with titles",
          oneOf = mcp.as_array {
            { const = "value1", title = "First Option" },
            { const = "value2", title = "Second Option" },
            { const = "value3", title = "Third Option" },
          },
        },
        -- legacy titled enum: enum + enumNames of the same length
        legacyEnum = {
          type = "string",
          description = "Select one option (legacy)",
          enum = mcp.as_array { "opt1", "opt2", "opt3" },
          enumNames = mcp.as_array { "Option One", "Option Two", "Option Three" },
        },
        -- untitled multi-select: items.enum (no items.anyOf)
        untitledMulti = {
          type = "array",
          description = "Select multiple options",
          minItems = 1,
          maxItems = 3,
          items = { type = "string", enum = mcp.as_array { "option1", "option2", "option3" } },
        },
        -- titled multi-select: items.anyOf of const/title (no items.enum)
        titledMulti = {
          type = "array",
          description = "Select multiple options with titles",
          minItems = 1,
          maxItems = 3,
          items = {
            anyOf = mcp.as_array {
              { const = "value1", title = "First Choice" },
              { const = "value2", title = "Second Choice" },
              { const = "value3", title = "Third Choice" },
            },
          },
        },
      },
      required = mcp.as_array {},
    })
    if not result then return mcp.fail("Elicitation not supported or error: %s", err) end
    return describe("Elicitation completed", result)
  end,
}

-- json-schema-2020-12 (pending scenario, tools/list only): a raw JSON Schema
-- that must be listed unchanged: $schema, $defs and additionalProperties=false
-- (SEP-1613), and from 2026-07-28 on (SEP-2106; SKIPPED at 2025-11-25 when
-- missing) an $anchor in $defs, allOf/anyOf and if/then/else. The suite's
-- canonical fixture (JSON_SCHEMA_2020_12_FIXTURE in 0.2.0-alpha.12).
mcp.tool {
  name = "json_schema_2020_12_tool",
  description = "Tool with JSON Schema 2020-12 features",
  inputSchema = {
    ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
    type = "object",
    ["$defs"] = {
      address = {
        ["$anchor"] = "addressDef",
        type = "object",
        properties = {
          street = { type = "string" },
          city = { type = "string" },
        },
      },
    },
    properties = {
      name = { type = "string" },
      address = { ["$ref"] = "#/$defs/address" },
      contactMethod = { type = "string", enum = mcp.as_array { "phone", "email" } },
      phone = { type = "string" },
      email = { type = "string" },
    },
    allOf = mcp.as_array {
      { anyOf = mcp.as_array { { required = mcp.as_array { "phone" } }, { required = mcp.as_array { "email" } } } },
    },
    ["if"] = {
      properties = { contactMethod = { const = "phone" } },
      required = mcp.as_array { "contactMethod" },
    },
    ["then"] = { required = mcp.as_array { "phone" } },
    ["else"] = { required = mcp.as_array { "email" } },
    additionalProperties = false,
  },
  handler = function(args)
    return "JSON Schema 2020-12 tool called with: " .. json.encode(args)
  end,
}
