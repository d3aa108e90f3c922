// Reference MCP server for the stdio benchmark: the same `echo` tool as
// bench/apps/echo, built with the official TypeScript SDK so luamcp has a
// baseline to be compared against side by side.
//
// Run from anywhere after `npm ci --prefix tests`:  node bench/ts_echo_server.mjs
import { StdioServerTransport } from "../tests/node_modules/@modelcontextprotocol/sdk/dist/esm/server/stdio.js";
import { echoServer } from "./ts_echo_tool.mjs";

const server = echoServer();

// No explicit exit: once the client closes stdin, no handle is left and
// Node exits by itself after flushing pending replies.
await server.connect(new StdioServerTransport());
