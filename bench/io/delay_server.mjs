// The node:http twin of bench/io/delay_server.c, the slow upstream of the
// I/O-bound benchmark (bench/io/run.sh uses it with BENCH_IO_UPSTREAM=node;
// the C one is the default: this one becomes the bottleneck at 1,000
// connections, see delay_server.c). A plain node:http server on 127.0.0.1
// that answers every request after a fixed delay (50 ms by default) with a
// small JSON body, keep-alive.
//
// Usage: node bench/io/delay_server.mjs [-p PORT] [-d DELAY_MS]   (the C one's options)
//   PORT 0 (the default) lets the system choose; the chosen port is printed
//   on stdout as `PORT <n>` once the server listens.
//
// The tool servers under test hold one connection per call in flight, so up
// to ~1,000 keep-alive connections at once: the backlog and the timeouts are
// set for that, and the server has nothing per request but one timer.
import http from "node:http";

const opt = (flag, dflt) => {
  const i = process.argv.indexOf(flag);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const port = opt("-p", 0);
const delayMs = opt("-d", 50);
const body = JSON.stringify({ ok: true, delay_ms: delayMs });
const headers = {
  "Content-Type": "application/json",
  "Content-Length": Buffer.byteLength(body),
};

const server = http.createServer({ keepAliveTimeout: 60_000, requestTimeout: 0, headersTimeout: 60_000 }, (req, res) => {
  req.resume(); // a GET has no body; drain whatever comes
  setTimeout(() => {
    res.writeHead(200, headers);
    res.end(body);
  }, delayMs);
});
server.maxHeadersCount = 64;
server.maxRequestsPerSocket = 0; // no limit: connections stay for the whole run
server.listen({ host: "127.0.0.1", port, backlog: 4096 }, () => {
  process.stdout.write(`PORT ${server.address().port}\n`);
});
const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
process.on("SIGUSR1", () => {}); // the C server's "reset the counts"; not node's inspector
