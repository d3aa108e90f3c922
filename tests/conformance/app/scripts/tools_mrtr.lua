-- tools_mrtr.lua — the tools the 2026-07-28 scenarios of the suite
-- (@modelcontextprotocol/conformance 0.2.0-alpha.12, `--requirements
-- 2026-07-28`) call by name: the input-required-result-* (MRTR, SEP-2322)
-- ones, server-stateless's diagnostic tools (SEP-2575) and the custom-header
-- one (SEP-2243). The scenario that calls each tool is named above it.
--
-- Each handler is written once for both eras, the way a script author writes
-- it: it asks with ctx:elicit / ctx:sample / ctx:roots and uses the answer.
-- Under 2025-11-25 these are server->client requests; under 2026-07-28 the
-- server answers the call with an InputRequiredResult and completes it on the
-- client's retry (inputResponses + requestState). Nothing here implements
-- MRTR. What these handlers use that luamcp does not have yet (tests/
-- conformance/NEEDS.md has the list, for issue 12):
--   key = "..."             on ctx:elicit / ctx:sample / ctx:roots{}: the
--                           inputRequests key the question goes out under (the
--                           scenarios look for "user_name"; the retry's answer
--                           comes back under it)
--   ctx:ask{ k = {method=, params=}, ... }
--                           several questions in one round (one
--                           InputRequiredResult with every key; under 2025 the
--                           requests at once); returns the answers by key
--   ctx.client_capabilities the capabilities of this request's client
-- They are only called at 2026-07-28: nothing in the 2025-11-25 and 0.1.16
-- runs reaches them, so those runs are unchanged.
local mcp = require "mcp"
local fixtures = require "fixtures"

-- a requestedSchema with one required property of `type`
local function one_field(name, type)
  return {
    type = "object",
    properties = { [name] = { type = type } },
    required = mcp.as_array { name },
  }
end

-- the text of a sampling answer's content (one block, or a list of them)
local function sampled_text(result)
  local content = type(result) == "table" and result.content
  if type(content) ~= "table" then return nil end
  if content.type then return content.text end
  for _, block in ipairs(content) do
    if type(block) == "table" and block.type == "text" then return block.text end
  end
  return nil
end

local function count(list)
  return type(list) == "table" and #list or 0
end

-- {====== input-required-result-* (SEP-2322)

-- input-required-result-basic-elicitation: round 1 asks under the key
-- "user_name" (elicitation/create, {name: string}); the retry carries the
-- answer and gets "Hello, <name>!". Also called by -missing-input-response
-- (a retry whose only answer is under another key: ask again, no error),
-- -result-type (resultType "input_required" present), -ignore-extra-params
-- (user_name plus unknown keys, no requestState: complete) and
-- -validate-input (user_name = 12345, inputResponses = null: an error or a
-- new question, never a complete result).
mcp.tool {
  name = "test_input_required_result_elicitation",
  description = "MRTR: asks the user's name (elicitation), then greets them",
  handler = function(_, ctx)
    local answer = ctx:elicit {
      key = "user_name",
      message = "What is your name?",
      requestedSchema = one_field("name", "string"),
    }
    if answer.action ~= "accept" then return mcp.fail("No name given (%s)", tostring(answer.action)) end
    return ("Hello, %s!"):format(answer.content.name)
  end,
}

-- input-required-result-basic-sampling: one sampling/createMessage question
-- (the scenario answers whatever key it finds; the described one is
-- "capital_question"), then the sampled text
mcp.tool {
  name = "test_input_required_result_sampling",
  description = "MRTR: asks the client's model a question (sampling), then returns its answer",
  handler = function(_, ctx)
    local result = ctx:sample {
      key = "capital_question",
      messages = mcp.as_array {
        { role = "user", content = { type = "text", text = "What is the capital of France?" } },
      },
      maxTokens = 100,
    }
    return "Sampling result: " .. (sampled_text(result) or "no response")
  end,
}

-- input-required-result-basic-list-roots: one roots/list question
-- ("client_roots"), then the roots it got
mcp.tool {
  name = "test_input_required_result_list_roots",
  description = "MRTR: asks the client's roots (roots/list), then lists them",
  handler = function(_, ctx)
    local roots = ctx:roots { key = "client_roots" }
    local uris = {}
    for i, root in ipairs(roots) do uris[i] = root.uri end
    return ("Found %d root(s): %s"):format(#uris, table.concat(uris, ", "))
  end,
}

-- input-required-result-request-state: round 1 must carry a requestState
-- besides the question ("confirm", {ok: boolean}); the retry echoes it, and the
-- text must say "state-ok". The state is the server's (sealed, bound to this
-- tool and its arguments): the handler only asks.
mcp.tool {
  name = "test_input_required_result_request_state",
  description = "MRTR: one confirmation round; the retry must echo the requestState",
  handler = function(_, ctx)
    local answer = ctx:elicit {
      key = "confirm",
      message = "Please confirm",
      requestedSchema = one_field("ok", "boolean"),
    }
    return ("state-ok: confirmed=%s"):format(tostring(answer.content and answer.content.ok))
  end,
}

-- input-required-result-multiple-input-requests: three questions of three
-- kinds in ONE round (at least 3 inputRequests: elicitation, sampling,
-- roots/list) plus a requestState; the retry answers all three. Asked one
-- after the other they would take three rounds, so they are asked together.
mcp.tool {
  name = "test_input_required_result_multiple_inputs",
  description = "MRTR: asks a name, a greeting and the roots in one round",
  handler = function(_, ctx)
    local answers = ctx:ask {
      user_name = {
        method = "elicitation/create",
        params = { message = "What is your name?", requestedSchema = one_field("name", "string") },
      },
      greeting = {
        method = "sampling/createMessage",
        params = {
          messages = mcp.as_array {
            { role = "user", content = { type = "text", text = "Generate a greeting" } },
          },
          maxTokens = 50,
        },
      },
      client_roots = { method = "roots/list" },
    }
    local name = answers.user_name.content and answers.user_name.content.name
    return ("Name: %s; Greeting: %s; Roots: %d"):format(tostring(name),
      sampled_text(answers.greeting) or "none", count(answers.client_roots.roots))
  end,
}

-- input-required-result-multi-round: two questions one after the other: round
-- 1 asks "step1" (name), round 2 (with step1's answer) asks "step2" (colour)
-- under a NEW requestState, round 3 completes. The first answer is in the
-- state the server hands back, not in this handler.
mcp.tool {
  name = "test_input_required_result_multi_round",
  description = "MRTR: asks a name, then a favourite colour, then answers",
  handler = function(_, ctx)
    local step1 = ctx:elicit {
      key = "step1",
      message = "Step 1: What is your name?",
      requestedSchema = one_field("name", "string"),
    }
    local step2 = ctx:elicit {
      key = "step2",
      message = "Step 2: What is your favorite color?",
      requestedSchema = one_field("color", "string"),
    }
    return ("Multi-round complete for %s who likes %s"):format(step1.content.name, step2.content.color)
  end,
}

-- input-required-result-tampered-state: round 1 (question "confirm" and a
-- requestState); the retry sends requestState .. "-TAMPERED" and must get a
-- JSON-RPC error (-32602), neither a result nor a new question. The sealing is
-- the server's.
mcp.tool {
  name = "test_input_required_result_tampered_state",
  description = "MRTR: one confirmation round whose requestState must not be altered",
  handler = function(_, ctx)
    local answer = ctx:elicit {
      key = "confirm",
      message = "Please confirm",
      requestedSchema = one_field("ok", "boolean"),
    }
    return ("integrity-ok: state verified (ok=%s)"):format(tostring(answer.content and answer.content.ok))
  end,
}

-- input-required-result-capability-check: the call declares sampling only; the
-- questions must be those the client can answer (no elicitation/create). A
-- handler that can do with either asks what the request's client declared.
mcp.tool {
  name = "test_input_required_result_capabilities",
  description = "MRTR: asks only through the capabilities the client declared",
  handler = function(_, ctx)
    local caps = ctx.client_capabilities
    local questions = {}
    if caps.elicitation then
      questions.elicit_input = {
        method = "elicitation/create",
        params = { message = "Elicitation input", requestedSchema = one_field("value", "string") },
      }
    end
    if caps.sampling then
      questions.sample_input = {
        method = "sampling/createMessage",
        params = {
          messages = mcp.as_array {
            { role = "user", content = { type = "text", text = "Sample request" } },
          },
          maxTokens = 50,
        },
      }
    end
    if next(questions) == nil then return "No supported capabilities declared" end
    local answers = ctx:ask(questions)
    local keys = {}
    for k in pairs(answers) do keys[#keys + 1] = k end
    table.sort(keys)
    return "capabilities-ok: received " .. table.concat(keys, ",")
  end,
}

-- }======

-- {====== server-stateless (SEP-2575) diagnostics

-- sep-2575-server-rejects-undeclared-capability / -missing-capability-http-400:
-- called with clientCapabilities {} it must fail with -32021
-- (MissingRequiredClientCapability, data.requiredCapabilities = {sampling =
-- {}}) and HTTP 400 — not run, and not an isError result. No pcall around
-- ctx:sample: the capability failure is the server's to report.
mcp.tool {
  name = "test_missing_capability",
  description = "Needs the client's sampling capability (asks its model)",
  handler = function(_, ctx)
    local result = ctx:sample {
      messages = mcp.as_array {
        { role = "user", content = { type = "text", text = "Say hello" } },
      },
      maxTokens = 20,
    }
    return "Success: " .. (sampled_text(result) or "no response")
  end,
}

-- sep-2575-http-server-no-independent-requests-on-stream: called with the
-- elicitation capability; what comes back on the call's stream may be
-- notifications and the response (here an InputRequiredResult), never a
-- JSON-RPC request such as elicitation/create
mcp.tool {
  name = "test_streaming_elicitation",
  description = "Reports progress, then asks the user to confirm (elicitation)",
  handler = function(_, ctx)
    ctx:progress(50, 100, "Half way")
    local answer = ctx:elicit {
      key = "confirm",
      message = "Continue?",
      requestedSchema = one_field("ok", "boolean"),
    }
    return ("Streaming complete (ok=%s)"):format(tostring(answer.content and answer.content.ok))
  end,
}

-- sep-2575-server-no-log-without-loglevel: the call carries no
-- io.modelcontextprotocol/logLevel, so this log must not reach the client
mcp.tool {
  name = "test_logging_tool",
  description = "Logs one info message, then answers",
  handler = function(_, ctx)
    ctx:info("Diagnostic trace logging activated")
    return "Logging evaluated"
  end,
}

-- sep-2575-server-sends-subscription-ack / -tags-subscription-id /
-- -honors-notification-filter / -sends-tools-list-changed-on-subscription:
-- called while a subscriptions/listen stream is open; the tool list must
-- change, and notifications/tools/list_changed reach the streams that asked
-- for toolsListChanged (and only those). In luamcp a list changes when the
-- app does: this saves scripts/zz_trigger_tools.lua with a new tool each time
-- (the counter lives in mcp.store, which every instance shares), and hot reload
-- publishes it and says tools/list_changed.
mcp.tool {
  name = "test_trigger_tool_change",
  description = "Changes the tool list (saves a script that hot reload adds)",
  handler = function()
    -- a count every instance shares (one app behind nginx): each save differs
    local n = mcp.store.incr("tool_changes")
    fixtures.save_script("zz_trigger_tools.lua", ([[
-- written by test_trigger_tool_change (tools_mrtr.lua) at run time; not in git
local mcp = require "mcp"
mcp.tool {
  name = "dynamic_tool_%d",
  description = "Added at run time by test_trigger_tool_change (change %d)",
  handler = function() return "dynamic tool %d" end,
}
]]):format(n, n, n))
    return ("Tool list changed (change %d)"):format(n)
  end,
}

-- sep-2575-server-sends-prompts-list-changed-on-subscription: the same for
-- the prompt list (notifications/prompts/list_changed)
mcp.tool {
  name = "test_trigger_prompt_change",
  description = "Changes the prompt list (saves a script that hot reload adds)",
  handler = function()
    -- a count every instance shares (one app behind nginx): each save differs
    local n = mcp.store.incr("prompt_changes")
    fixtures.save_script("zz_trigger_prompts.lua", ([[
-- written by test_trigger_prompt_change (tools_mrtr.lua) at run time; not in git
local mcp = require "mcp"
mcp.prompt {
  name = "dynamic_prompt_%d",
  description = "Added at run time by test_trigger_prompt_change (change %d)",
  get = function() return mcp.user("dynamic prompt %d") end,
}
]]):format(n, n, n))
    return ("Prompt list changed (change %d)"):format(n)
  end,
}

-- }======

-- {====== http-custom-header-server-validation (SEP-2243, pending)

-- The first tool with an x-mcp-header property: the client mirrors `region`
-- into the header Mcp-Param-Region (plain, or =?base64?...?=); the server
-- must check it against the body: valid Base64 decoded and accepted, bad
-- padding or characters rejected, a value without the =?base64?...?= wrapper
-- taken literally, a missing header while the body has the value rejected
-- (HTTP 400, -32020). A raw JSON Schema: the annotation is listed as written.
mcp.tool {
  name = "test_custom_header",
  description = "Echoes its region argument, which clients mirror into the Mcp-Param-Region header",
  inputSchema = {
    type = "object",
    properties = {
      region = {
        type = "string",
        description = "The region to run in (sent as the Mcp-Param-Region header too)",
        ["x-mcp-header"] = "Region",
      },
    },
    required = mcp.as_array { "region" },
  },
  handler = function(args)
    return "region=" .. args.region
  end,
}

-- }======
