// TypeScript SDK peer of the tools/list curve (bench/scale/README.md): N tools,
// each like bench/scale's generated Lua ones (a `text` string input; the
// handler echoes it), registered on one McpServer served over stdio.
//
//   node bench/scale/ts_many_server.mjs N
//
// The SDK does not paginate tools/list: one page holds every tool, and each
// listing converts every zod input schema to JSON Schema again.
// Imports are relative paths into tests/node_modules (see bench/ts_echo_tool.mjs).
import { StdioServerTransport } from "../../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import { McpServer, registerEcho } from "../ts_echo_tool.mjs";

const n = Number(process.argv[2]);
if (!Number.isInteger(n) || n < 1) {
  console.error("usage: node bench/scale/ts_many_server.mjs N");
  process.exit(2);
}

const server = new McpServer({ name: "ts-many", version: "1.0.0" });
for (let i = 1; i <= n; i++)
  registerEcho(server, `tool_${String(i).padStart(5, "0")}`, `Tool number ${i}: echoes the given text back.`);
await server.connect(new StdioServerTransport());
