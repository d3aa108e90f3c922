-- tools_tasks.lua — the tools the tasks-extension scenarios of the suite
-- (io.modelcontextprotocol/tasks, SEP-2663; run by `--requirements
-- 2026-07-28` as "extension, not scored") call by name. Each scenario's
-- description lists the fixtures `tools/list` must include; the scenario
-- that calls each tool is named above it.
--
-- The API they use (README "Tasks"):
--   task = "optional" | "required"  (mcp.tool): the tool may (must) run as a
--       task when the request's client declared the extension; "required"
--       and no extension: -32021 before the handler runs. Without the
--       extension a task tool runs as any other tool.
--   when the call becomes a task: at the handler's first wait that is not a
--       question to the client (ctx:sleep, mcp.http, mcp.exec, a socket) or at
--       ctx:as_task(), whichever comes first; a handler that ends before
--       either answers the call itself (the immediate-result shortcut).
--       Questions asked before that are MRTR rounds of the call
--       (InputRequiredResult); after it, the task's input_required status
--       (tasks/get inputRequests, answered by tasks/update).
--   ctx:as_task()   become a task now (the client gets CreateTaskResult, the
--       handler goes on in the background)
--   ctx:ask{...}    several questions at once (tools_mrtr.lua)
--   mcp.rpc_error(code, message)  an error value that ends the call as a
--       JSON-RPC error (a task: status "failed" with that error), where a Lua
--       error or mcp.fail() is a tool error (isError; a task: "completed")
-- Only the tasks scenarios call these tools.
local mcp = require "mcp"

-- tasks-lifecycle, -capability-negotiation, -dispatch-and-envelope,
-- -request-headers: a sync-only tool (never a task, even when the call
-- carries the v1 `task` hint)
mcp.tool {
  name = "greet",
  description = "Greets someone (sync-only: never runs as a task)",
  input = { name = mcp.string { description = "Who to greet" } },
  handler = function(args)
    return ("Hello, %s!"):format(args.name)
  end,
}

-- tasks-lifecycle, -capability-negotiation, -wire-fields,
-- -request-state-removal, -dispatch-and-envelope, -request-headers: sleeps
-- `seconds` (the sleep is what makes it a task; 0: the immediate result),
-- then a result. tasks/cancel while it sleeps ends the sleep: the task
-- settles to "cancelled".
mcp.tool {
  name = "slow_compute",
  description = "Sleeps the given number of seconds, then returns (runs as a task when the client supports tasks)",
  task = "optional",
  input = {
    seconds = mcp.number { min = 0, description = "How long to work" },
    label = mcp.string { optional = true, description = "A name for this run" },
  },
  handler = function(args, ctx)
    if args.seconds > 0 then ctx:sleep(args.seconds) end
    return ("slow_compute %s: done after %g s"):format(args.label or "-", args.seconds)
  end,
}

-- tasks-lifecycle, -dispatch-and-envelope, -required-task-error: works ~1 s
-- and fails as a tool (isError: the task ends "completed" with
-- result.isError). Declared "required": a client without the extension gets
-- -32021 before the handler runs.
mcp.tool {
  name = "failing_job",
  description = "Works for about a second, then reports a tool error (must run as a task)",
  task = "required",
  handler = function(_, ctx)
    ctx:sleep(1)
    return mcp.fail("failing_job: the job failed, on purpose")
  end,
}

-- tasks-lifecycle: a protocol-level error inside a task: status "failed"
-- with an inlined JSON-RPC error {code, message}, no result
mcp.tool {
  name = "protocol_error_job",
  description = "Starts, then ends in a protocol-level error (runs as a task)",
  task = "optional",
  handler = function(_, ctx)
    ctx:sleep(0.1)
    error(mcp.rpc_error(-32603, "protocol_error_job: internal failure, on purpose"))
  end,
}

-- tasks-mrtr-input, -dispatch-and-envelope: a task that asks one question
-- (tasks/get: status input_required, one inputRequests entry; tasks/update
-- answers it, the ack is {resultType:"complete"}), then completes
mcp.tool {
  name = "confirm_delete",
  description = "Asks the user to confirm deleting a file, then reports (runs as a task)",
  task = "optional",
  input = { filename = mcp.string { description = "The file to delete" } },
  handler = function(args, ctx)
    ctx:as_task() -- the question belongs to the task, not to the call
    local answer = ctx:elicit {
      key = "confirm",
      message = ("Delete %s?"):format(args.filename),
      requestedSchema = {
        type = "object",
        properties = { confirm = { type = "boolean", description = "Delete it" } },
        required = mcp.as_array { "confirm" },
      },
    }
    if answer.action == "accept" and answer.content and answer.content.confirm then
      return ("Deleted %s"):format(args.filename)
    end
    return ("Kept %s"):format(args.filename)
  end,
}

-- tasks-mrtr-input (partial fulfilment): a task with two questions pending at
-- once; answering one leaves the other in inputRequests, answering both
-- completes it
mcp.tool {
  name = "multi_input",
  description = "Asks two questions at once, then reports both answers (runs as a task)",
  task = "optional",
  handler = function(_, ctx)
    ctx:as_task()
    local schema = {
      type = "object",
      properties = { name = { type = "string" }, confirm = { type = "boolean" } },
      required = mcp.as_array { "name" },
    }
    local answers = ctx:ask {
      first = { method = "elicitation/create", params = { message = "First name?", requestedSchema = schema } },
      second = { method = "elicitation/create", params = { message = "Second name?", requestedSchema = schema } },
    }
    local function name(a) return a.content and a.content.name or "-" end
    return ("first=%s, second=%s"):format(name(answers.first), name(answers.second))
  end,
}

-- tasks-mrtr-composition: MRTR first, then a task. Round 1 (no task yet) is an
-- InputRequiredResult asking "user_name" and carries no taskId; the retry
-- with the answer becomes a task (CreateTaskResult, no requestState), whose
-- result names the user.
mcp.tool {
  name = "test_tool_with_task",
  description = "Asks the user's name, then greets them from a task (must run as a task)",
  task = "required",
  handler = function(_, ctx)
    local answer = ctx:elicit {
      key = "user_name",
      message = "What is your name?",
      requestedSchema = {
        type = "object",
        properties = { name = { type = "string" } },
        required = mcp.as_array { "name" },
      },
    }
    ctx:as_task()
    ctx:sleep(0.1)
    return ("Hello, %s! (from a task)"):format(answer.content and answer.content.name or "friend")
  end,
}
