// The TypeScript peer of the I/O-bound benchmark (bench/io/run.sh): the
// `fetch` tool of bench/apps/fetch, written with the official TypeScript SDK
// v2 (@modelcontextprotocol/server 2.4.0, pinned in tests/package.json): one
// `await fetch(url)` (Node's built-in fetch, undici, keep-alive) per call,
// answering "status <status> bytes <body length>".
//
//   node bench/io/ts_fetch_server.mjs                 stdio (serveStdio, the v2 entry)
//   node bench/io/ts_fetch_server.mjs --http PORT     Streamable HTTP on 127.0.0.1:PORT/mcp,
//        stateless: createMcpHandler(factory), whose default serves 2025-era
//        requests (what luamcp speaks) with a fresh server per request
//   node bench/io/ts_fetch_server.mjs --http PORT --json
//        the same, hand-wired: a fresh McpServer + WebStandardStreamableHTTPServerTransport
//        ({ sessionIdGenerator: undefined, enableJsonResponse: true }) per request,
//        so answers are plain JSON as luamcp's are (the v1 bench's ts-sl pattern)
//
// The SDK lives in tests/node_modules, which Node's ESM resolver would not
// search from bench/, so the imports are relative paths into the pinned
// packages (as in bench/ts_echo_tool.mjs).
import { serveFetchHandler } from "../ts_node_http.mjs";
import {
  McpServer,
  WebStandardStreamableHTTPServerTransport,
  createMcpHandler,
} from "../../tests/node_modules/@modelcontextprotocol/server/dist/index.mjs";
import { serveStdio } from "../../tests/node_modules/@modelcontextprotocol/server/dist/stdio.mjs";
import { z } from "../../tests/node_modules/zod/index.js";

/** A new McpServer with the one fetch tool. */
function fetchServer() {
  const server = new McpServer({ name: "ts-fetch", version: "1.0.0" });
  server.registerTool(
    "fetch",
    { description: "GETs the URL and says what came back.", inputSchema: z.object({ url: z.string() }) },
    async ({ url }) => {
      const r = await fetch(url);
      const body = await r.arrayBuffer();
      return { content: [{ type: "text", text: `status ${r.status} bytes ${body.byteLength}` }] };
    },
  );
  return server;
}

const args = process.argv.slice(2);
const httpAt = args.indexOf("--http");

if (httpAt < 0) {
  // No explicit exit: once the client closes stdin the transport closes and,
  // with no handle left (undici's idle sockets are unref'd), Node exits.
  serveStdio(() => fetchServer());
} else {
  const port = Number(args[httpAt + 1]);
  const json = args.includes("--json");

  // What `toNodeHandler` of @modelcontextprotocol/node does (that package is
  // not among the pinned ones): node request → web Request (body as text),

  const serveJson = async (request) => {
    const server = fetchServer();
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    await server.connect(transport);
    try {
      return await transport.handleRequest(request);
    } finally {
      transport.close().catch(() => {});
      server.close().catch(() => {});
    }
  };
  const handler = json ? { fetch: serveJson } : createMcpHandler(() => fetchServer());

  serveFetchHandler(handler, port);
}
