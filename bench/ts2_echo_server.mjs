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
import http from "node:http";
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
  const toRequest = async (req) => {
    const headers = new Headers();
    for (const [k, v] of Object.entries(req.headers)) {
      if (Array.isArray(v)) for (const x of v) headers.append(k, x);
      else if (v !== undefined) headers.set(k, v);
    }
    let body;
    if (req.method !== "GET" && req.method !== "HEAD") {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      body = Buffer.concat(chunks).toString("utf8");
    }
    return new Request(`http://${req.headers.host ?? "localhost"}${req.url}`, { method: req.method, headers, body });
  };
  const send = async (res, response) => {
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) for await (const chunk of response.body) res.write(chunk);
    res.end();
  };
  const server = http.createServer({ keepAliveTimeout: 60_000, requestTimeout: 0 }, async (req, res) => {
    try {
      if (new URL(req.url, "http://x").pathname !== "/mcp") {
        res.writeHead(404).end();
        return;
      }
      await send(res, await handler.fetch(await toRequest(req)));
    } catch (e) {
      if (!res.headersSent) res.writeHead(500, { "Content-Type": "text/plain" });
      res.end(String(e?.message ?? e));
    }
  });
  server.listen({ host: "127.0.0.1", port, backlog: 4096 });
  const stop = () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
}
