-- prompts.lua — the prompts the conformance suite gets (and completes).
local mcp = require "mcp"
local fixtures = require "fixtures"

-- prompts-get-simple
mcp.prompt {
  name = "test_simple_prompt",
  title = "Simple Test Prompt",
  description = "A simple prompt without arguments",
  get = function()
    return mcp.user("This is a simple prompt for testing.")
  end,
}

-- prompts-get-with-args; completion-complete asks for completions of arg1
mcp.prompt {
  name = "test_prompt_with_arguments",
  title = "Prompt With Arguments",
  description = "A prompt with required arguments",
  args = {
    { name = "arg1", description = "First test argument" },
    { name = "arg2", description = "Second test argument" },
  },
  get = function(args)
    return mcp.user(("Prompt with arguments: arg1='%s', arg2='%s'"):format(args.arg1, args.arg2))
  end,
}

-- prompts-get-embedded-resource (called with resourceUri = test://example-resource)
mcp.prompt {
  name = "test_prompt_with_embedded_resource",
  title = "Prompt With Embedded Resource",
  description = "A prompt that includes an embedded resource",
  args = {
    { name = "resourceUri", description = "URI of the resource to embed" },
  },
  get = function(args)
    return {
      mcp.user(mcp.embed {
        uri = args.resourceUri,
        mimeType = "text/plain",
        text = "Embedded resource content for testing.",
      }),
      mcp.user("Please process the embedded resource above."),
    }
  end,
}

-- prompts-get-with-image
mcp.prompt {
  name = "test_prompt_with_image",
  title = "Prompt With Image",
  description = "A prompt that includes image content",
  get = function()
    return {
      mcp.user(mcp.image(fixtures.IMG, "image/png")),
      mcp.user("Please analyze the image above."),
    }
  end,
}

-- input-required-result-non-tool-request (2026-07-28, SEP-2322): MRTR on
-- prompts/get. Round 1 asks "user_context" (elicitation/create, {context:
-- string}); the retry with the answer gets the prompt. Uses the `key` field of
-- ctx:elicit that luamcp does not have yet (tools_mrtr.lua, NEEDS.md).
mcp.prompt {
  name = "test_input_required_result_prompt",
  title = "Prompt Needing Input",
  description = "A prompt that asks the user for its context first (elicitation)",
  get = function(_, ctx)
    local answer = ctx:elicit {
      key = "user_context",
      message = "What context should the prompt use?",
      requestedSchema = {
        type = "object",
        properties = { context = { type = "string" } },
        required = mcp.as_array { "context" },
      },
    }
    return mcp.user("Prompt with context: " .. tostring(answer.content and answer.content.context))
  end,
}
