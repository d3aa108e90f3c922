// The `echo` tool of the TypeScript SDK peers (bench/ts_echo_server.mjs,
// bench/http/ts_http_server.mjs, bench/scale/ts_many_server.mjs): the same
// tool as bench/apps/echo, registered on an official McpServer.
//
// The SDK lives in tests/node_modules, which Node's ESM resolver would not
// search from bench/ (and ESM ignores NODE_PATH), so the imports are
// relative file paths into the pinned packages (see tests/package.json).
import { McpServer } from "../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js";
import { z } from "../tests/node_modules/zod/index.js";

/** Register an echo tool called name on server. */
export function registerEcho(server, name = "echo", description = "Echoes the given text back.") {
  server.registerTool(
    name,
    { description, inputSchema: { text: z.string().describe("Text to echo") } },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
}

/** A new McpServer with the one echo tool. */
export function echoServer(name = "ts-echo") {
  const server = new McpServer({ name, version: "1.0.0" });
  registerEcho(server);
  return server;
}

export { McpServer };
