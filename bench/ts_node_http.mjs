// ts_node_http.mjs — serve a fetch-style handler ({fetch(Request) ->
// Response}, what the SDK v2's createMcpHandler returns) on node:http at
// 127.0.0.1:port/mcp: the adapter @modelcontextprotocol/node would give,
// which is not among the pinned packages. Shared by the v2 bench servers.
import http from "node:http";

async function toRequest(req) {
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
}

async function send(res, response) {
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body) for await (const chunk of response.body) res.write(chunk);
  res.end();
}

export function serveFetchHandler(handler, port) {
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
