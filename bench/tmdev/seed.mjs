// seed.mjs — the Redis data of bench/tmdev, from a fixed seed, as Redis
// protocol on stdout for `redis-cli --pipe`:
//   bench:top      a sorted set of 1,000 products (score: units sold)
//   cart:uN        a hash product_id -> quantity, 1-5 lines, for N = 1..USERS
//   history:uN     a list of the 20 products uN looked at last
// plus orders:seq = 0. USERS (default 1000) must match the driver's.
const USERS = Number(process.env.BENCH_TMDEV_USERS ?? 1000);
const PRODUCTS = 100000;

let s = 0x2545f491; // mulberry32: the same data every run
const rand = () => {
  s = (s + 0x6d2b79f5) | 0;
  let t = Math.imul(s ^ (s >>> 15), 1 | s);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const pick = (n) => 1 + Math.floor(rand() * n);

const out = [];
const cmd = (...args) => {
  let r = `*${args.length}\r\n`;
  for (const a of args) { const v = String(a); r += `$${Buffer.byteLength(v)}\r\n${v}\r\n`; }
  out.push(r);
};
cmd("FLUSHDB");
const top = ["ZADD", "bench:top"];
for (let i = 0; i < 1000; i++) top.push(pick(5000), pick(PRODUCTS));
cmd(...top);
for (let u = 1; u <= USERS; u++) {
  const cart = ["HSET", `cart:u${u}`];
  const lines = pick(5);
  for (let i = 0; i < lines; i++) cart.push(pick(PRODUCTS), pick(4));
  cmd(...cart);
  const hist = ["RPUSH", `history:u${u}`];
  for (let i = 0; i < 20; i++) hist.push(pick(PRODUCTS));
  cmd(...hist);
}
cmd("SET", "orders:seq", 0);
process.stdout.write(out.join(""));
