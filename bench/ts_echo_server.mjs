// Reference MCP server for the stdio benchmark: the same `echo` tool as
// bench/apps/echo, built with the official TypeScript SDK so luamcp has a
// baseline to be compared against side by side.
//
// Run from anywhere after `npm ci --prefix tests`:  node bench/ts_echo_server.mjs
//
// The SDK lives in tests/node_modules, which Node's ESM resolver would not
// search from bench/ (and ESM ignores NODE_PATH), so the imports below are
// relative file paths into the pinned packages (see tests/package.json).
import { McpServer } from "../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/mcp.js";
import { StdioServerTransport } from "../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import { z } from "../tests/node_modules/zod/index.js";

const server = new McpServer({ name: "ts-echo", version: "1.0.0" });

server.registerTool(
  "echo",
  {
    description: "Echoes the given text back.",
    inputSchema: { text: z.string().describe("Text to echo") },
  },
  async ({ text }) => ({ content: [{ type: "text", text }] }),
);

// No explicit exit: once the client closes stdin, no handle is left and
// Node exits by itself after flushing pending replies.
await server.connect(new StdioServerTransport());
