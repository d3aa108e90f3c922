-- board.lua — bench/redis/run.sh: a leaderboard on mcp.redis, three commands
-- a call, as one pipeline (pipe3: one park) or one after another (seq3:
-- three parks).
local mcp = require "mcp"
local redis = mcp.redis

mcp.tool {
  name = "pipe3",
  description = "Scores a player: HINCRBY, ZINCRBY, ZREVRANGE 0 2 in one pipeline.",
  input = { player = mcp.string() },
  handler = function(args)
    local r = redis.pipeline(function(p)
      p("HINCRBY", "bench:calls", args.player, 1)
      p("ZINCRBY", "bench:top", 1, args.player)
      p("ZREVRANGE", "bench:top", 0, 2)
    end)
    return tostring(r[1])
  end,
}

mcp.tool {
  name = "seq3",
  description = "The same three commands, one after another.",
  input = { player = mcp.string() },
  handler = function(args)
    local n = redis("HINCRBY", "bench:calls", args.player, 1)
    redis("ZINCRBY", "bench:top", 1, args.player)
    redis("ZREVRANGE", "bench:top", 0, 2)
    return tostring(n)
  end,
}
