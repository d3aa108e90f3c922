// server.mjs — the TypeScript peer of bench/tmdev, built as the published
// TM Dev Lab v2 Node server is: the official SDK 1.x (McpServer +
// StreamableHTTPServerTransport, stateless: a new server and transport per
// request), express, ioredis, and node:cluster with 4 worker processes
// (BENCH_TMDEV_TS_WORKERS). Each tool runs its HTTP call and its Redis
// commands in parallel (Promise.all), as the published servers do.
//   node server.mjs PORT REDIS_URL PRODUCT_API
// Answers in JSON rather than SSE (enableJsonResponse: the SDK's cheaper path).
import cluster from "node:cluster";
import express from "express";
import { Redis } from "ioredis";
import { z } from "zod";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";

const [port, redisUrl, api] = process.argv.slice(2);
const workers = Number(process.env.BENCH_TMDEV_TS_WORKERS ?? 4);

if (cluster.isPrimary) {
  for (let i = 0; i < workers; i++) cluster.fork();
  let up = 0;
  cluster.on("listening", () => { if (++up === workers) console.log(`LISTENING ${port}`); });
  cluster.on("exit", (w, code) => { if (code) console.error(`worker ${w.process.pid} exited ${code}`); });
  const stop = () => { for (const w of Object.values(cluster.workers)) w.kill(); process.exit(0); };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
} else {
  const redis = new Redis(redisUrl);
  const getJson = async (url, init) => {
    const r = await fetch(url, init);
    if (!r.ok) throw new Error(`${url}: ${r.status}`);
    return r.json();
  };
  const text = (v) => ({ content: [{ type: "text", text: JSON.stringify(v) }] });

  // the schemas made once per worker, as a user would write them
  const searchInput = { query: z.string(), limit: z.number().int().min(1).max(50).optional() };
  const cartInput = { user_id: z.string() };
  const checkoutInput = {
    user_id: z.string(),
    items: z.array(z.object({ product_id: z.number().int().min(1), quantity: z.number().int().min(1) })),
  };
  const makeServer = () => {
    const server = new McpServer({ name: "tmdev-ts", version: "1.0.0" });
    server.registerTool("search_products", {
      description: "Searches the catalogue and lists the ten best sellers.",
      inputSchema: searchInput,
    }, async ({ query, limit }) => {
      const [found, top] = await Promise.all([
        getJson(`${api}/products/search?q=${encodeURIComponent(query)}&limit=${limit ?? 10}`),
        redis.zrevrange("bench:top", 0, 9, "WITHSCORES"),
      ]);
      const best = [];
      for (let i = 0; i < top.length; i += 2) best.push({ product_id: Number(top[i]), sold: Number(top[i + 1]) });
      return text({ query, total: found.total, products: found.products, best_sellers: best });
    });
    server.registerTool("get_user_cart", {
      description: "A user's cart, its first product's details and what the user looked at last.",
      inputSchema: cartInput,
    }, async ({ user_id }) => {
      const cart = await redis.hgetall(`cart:${user_id}`);
      const items = Object.entries(cart).map(([id, q]) => ({ product_id: Number(id), quantity: Number(q) }));
      const first = items.length ? items[0].product_id : 1;
      const [product, history] = await Promise.all([
        getJson(`${api}/products/${first}`),
        redis.lrange(`history:${user_id}`, 0, 9),
      ]);
      return text({ user_id, items, first_product: product, recently_viewed: history });
    });
    server.registerTool("checkout", {
      description: "Prices a cart and records the order.",
      inputSchema: checkoutInput,
    }, async ({ user_id, items }) => {
      const first = items[0] ?? { product_id: 1, quantity: 1 };
      const [calc, written] = await Promise.all([
        getJson(`${api}/cart/calculate`, { method: "POST", headers: { "content-type": "application/json" },
                                           body: JSON.stringify({ items }) }),
        redis.pipeline().incr("orders:seq").rpush(`orders:${user_id}`, JSON.stringify(items))
          .zincrby("bench:top", first.quantity, first.product_id).exec(),
      ]);
      return text({ order_id: written[0][1], user_id, total: calc.total, subtotal: calc.subtotal, tax: calc.tax });
    });
    return server;
  };

  const app = express();
  app.use(express.json());
  app.post("/mcp", async (req, res) => {
    const server = makeServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => { transport.close(); server.close(); });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (e) {
      if (!res.headersSent) res.status(500).json({ jsonrpc: "2.0", error: { code: -32603, message: String(e) }, id: null });
    }
  });
  const refuse = (_req, res) => res.status(405).set("Allow", "POST").end();
  app.get("/mcp", refuse);
  app.delete("/mcp", refuse);
  app.listen(Number(port), "127.0.0.1");
}
