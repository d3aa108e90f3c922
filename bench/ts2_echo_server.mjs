// The TypeScript SDK v2 peer (@modelcontextprotocol/server 2.4.0, pinned in
// tests/package.json) of the stdio and HTTP benchmarks: the `echo` tool of
// bench/apps/echo, plus `ask` (one elicitation, the MRTR round trip of
// bench/apps/mrtr) written with the SDK's `inputRequired` builder.
//
//   node bench/ts2_echo_server.mjs              stdio: serveStdio(factory), the v2 entry;
//        it serves a 2025-era opening (initialize) and 2026-07-28 requests
//   node bench/ts2_echo_server.mjs --http PORT  Streamable HTTP on 127.0.0.1:PORT/mcp:
//        createMcpHandler(factory, { responseMode: "json" }) on node:http; the
//        2026-07-28 leg answers plain JSON, the 2025 leg (the SDK's stateless
//        legacy fallback, a fresh server per request) answers in SSE
//
// `ask` on a 2026-07-28 request answers input_required (inputRequests.q0)
// until the retry carries inputResponses.q0, then "ok". The SDK does not
// sign requestState (luamcp does, HMAC-SHA256), so none is minted here.
// As in bench/io/ts_fetch_server.mjs, the imports are relative paths into
// tests/node_modules and the node adapter is inlined (what `toNodeHandler`
// of @modelcontextprotocol/node does; that package is not pinned).
import { serveFetchHandler } from "./ts_node_http.mjs";
import { McpServer, createMcpHandler, inputRequired } from "../tests/node_modules/@modelcontextprotocol/server/dist/index.mjs";
import { serveStdio } from "../tests/node_modules/@modelcontextprotocol/server/dist/stdio.mjs";
import { z } from "../tests/node_modules/zod/index.js";

function echoServer() {
  const server = new McpServer({ name: "ts2-echo", version: "1.0.0" });
  server.registerTool(
    "echo",
    { description: "Echoes the given text back.", inputSchema: z.object({ text: z.string() }) },
    async ({ text }) => ({ content: [{ type: "text", text }] }),
  );
  server.registerTool("ask", { description: "Asks the client once, then says ok." }, async (ctx) => {
    if (ctx.mcpReq?.inputResponses?.q0 === undefined) {
      return inputRequired({
        inputRequests: {
          q0: inputRequired.elicit({
            message: "x",
            requestedSchema: { type: "object", properties: { a: { type: "string" } } },
          }),
        },
      });
    }
    return { content: [{ type: "text", text: "ok" }] };
  });
  return server;
}

const args = process.argv.slice(2);
const httpAt = args.indexOf("--http");

if (httpAt < 0) {
  // No explicit exit: once the client closes stdin the transport closes and Node exits.
  serveStdio(() => echoServer());
} else {
  const port = Number(args[httpAt + 1]);
  const handler = createMcpHandler(() => echoServer(), { responseMode: "json" });
  serveFetchHandler(handler, port);
}
