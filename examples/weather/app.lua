-- The weather example: a tool that calls JSON HTTP APIs (mcp.http) and one
-- that runs a command (mcp.exec). Both wait without blocking the server.
return {
  name = "weather",
  version = "1.0.0",
  title = "Weather",
  instructions = "Use forecast for the current weather of a city, local_time for the time in a time zone.",
}
