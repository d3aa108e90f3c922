/*
** product_api: the product service of the realistic MCP benchmark
** (bench/tmdev/run.sh). 100,000 products made in memory from a fixed seed,
** so every run and every server sees the same catalogue, served over
** HTTP/1.1 keep-alive on 127.0.0.1:
**
**   GET  /products/search?q=WORD[&limit=N]  the first N (default 10, at most
**        50) products whose name holds WORD, and how many do
**   GET  /products/{id}                     one product (404 if none)
**   POST /cart/calculate                    {"items":[{"product_id":I,"quantity":Q},...]}
**        -> each line's price, subtotal, 8 % tax, total
**
** One thread on libuv, answers written at once. A name is an adjective, a
** noun and the id; the search looks a lowercased word up in an index made at
** start (word -> ids), and keeps each word's answer once rendered, so a search
** costs a lookup, not a scan: the service must not be what the benchmark
** measures.
**
** Usage: product_api [-p PORT]   (PORT 0, the default, lets the system
** choose; `PORT <n>` is printed on stdout once listening). SIGTERM/SIGINT
** print `API_JSON {"requests":..,"connections_opened":..}` and exit 0.
** Build: cc -O2 -std=c11 -Wall -Wextra -o product_api product_api.c -luv
*/
#define _GNU_SOURCE
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#define N_PRODUCTS 100000
#define MAX_REQUEST (64 * 1024)

static const char *adjectives[] = { "red", "blue", "green", "black", "white", "silver", "golden", "wooden",
  "steel", "classic", "modern", "compact", "deluxe", "smart", "portable", "vintage" };
static const char *nouns[] = { "laptop", "phone", "chair", "lamp", "desk", "watch", "camera", "speaker",
  "backpack", "kettle", "monitor", "keyboard", "mouse", "headphones", "bottle", "jacket",
  "shoes", "tablet", "router", "blender" };
static const char *categories[] = { "electronics", "home", "office", "outdoor", "fashion", "kitchen", "sports", "toys" };
#define N_ADJ (sizeof adjectives / sizeof *adjectives)
#define N_NOUN (sizeof nouns / sizeof *nouns)
#define N_CAT (sizeof categories / sizeof *categories)
#define N_WORDS (N_ADJ + N_NOUN)

struct product { uint8_t adj, noun, cat; uint32_t price_cents, stock; uint16_t rating10; };
static struct product products[N_PRODUCTS + 1]; /* 1-based ids */
static uint32_t *postings[N_WORDS];              /* ids whose name holds word w, ascending */
static uint32_t n_postings[N_WORDS];
static char *search_cache[N_WORDS][51];          /* rendered answers by word and limit */
static size_t search_cache_len[N_WORDS][51];

static uv_loop_t *loop;
static long n_requests, n_conns;

static void die(const char *what) {
  fprintf(stderr, "product_api: %s\n", what);
  exit(1);
}

/* {====================================================== the catalogue */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull; /* splitmix64: fixed seed, same catalogue every run */
static uint64_t rng(void) {
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static void make_catalogue(void) {
  for (uint32_t id = 1; id <= N_PRODUCTS; id++) {
    struct product *p = &products[id];
    p->adj = (uint8_t)(rng() % N_ADJ);
    p->noun = (uint8_t)(rng() % N_NOUN);
    p->cat = (uint8_t)(rng() % N_CAT);
    p->price_cents = 199 + (uint32_t)(rng() % 99800); /* 1.99 .. 999.98 */
    p->stock = (uint32_t)(rng() % 500);
    p->rating10 = (uint16_t)(10 + rng() % 41);        /* 1.0 .. 5.0 */
    n_postings[p->adj]++;
    n_postings[N_ADJ + p->noun]++;
  }
  uint32_t fill[N_WORDS] = {0};
  for (size_t w = 0; w < N_WORDS; w++)
    if (!(postings[w] = malloc(n_postings[w] * sizeof **postings))) die("out of memory");
  for (uint32_t id = 1; id <= N_PRODUCTS; id++) {
    postings[products[id].adj][fill[products[id].adj]++] = id;
    size_t w = N_ADJ + products[id].noun;
    postings[w][fill[w]++] = id;
  }
}

static int product_json(char *out, size_t cap, uint32_t id) {
  const struct product *p = &products[id];
  return snprintf(out, cap,
    "{\"id\":%u,\"name\":\"%s %s %u\",\"category\":\"%s\",\"price\":%u.%02u,\"stock\":%u,\"rating\":%u.%u}",
    id, adjectives[p->adj], nouns[p->noun], id, categories[p->cat], p->price_cents / 100, p->price_cents % 100,
    p->stock, p->rating10 / 10, p->rating10 % 10);
}

/* }====================================================== */

/* {====================================================== answers */

struct conn {
  uv_tcp_t tcp;
  char *buf;
  size_t len, cap;
  int closing, close_after;
};

struct out { char *data; size_t len, cap; };

static void out_put(struct out *o, const char *s, size_t n) {
  if (o->len + n > o->cap) {
    size_t ncap = o->cap ? o->cap * 2 : 4096;
    while (ncap < o->len + n) ncap *= 2;
    if (!(o->data = realloc(o->data, ncap))) die("out of memory");
    o->cap = ncap;
  }
  memcpy(o->data + o->len, s, n);
  o->len += n;
}

static void answer(struct out *o, int status, const char *body, size_t blen) {
  char head[160];
  int h = snprintf(head, sizeof head,
    "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n",
    status, status == 200 ? "OK" : status == 404 ? "Not Found" : "Bad Request", blen);
  out_put(o, head, (size_t)h);
  out_put(o, body, blen);
}

static void answer_search(struct out *o, const char *query, size_t qlen) {
  const char *q = memmem(query, qlen, "q=", 2);
  if (!q || (q != query && q[-1] != '&')) { answer(o, 400, "{\"error\":\"q is required\"}", 25); return; }
  q += 2;
  char word[32];
  size_t n = 0;
  while (q < query + qlen && *q != '&' && n < sizeof word - 1) word[n++] = (char)tolower((unsigned char)*q++);
  word[n] = 0;
  long limit = 10;
  const char *l = memmem(query, qlen, "limit=", 6);
  if (l) limit = strtol(l + 6, NULL, 10);
  if (limit < 1) limit = 1;
  if (limit > 50) limit = 50;
  size_t w;
  for (w = 0; w < N_WORDS; w++)
    if (!strcmp(word, w < N_ADJ ? adjectives[w] : nouns[w - N_ADJ])) break;
  if (w == N_WORDS) {
    char body[96];
    int b = snprintf(body, sizeof body, "{\"query\":\"%s\",\"total\":0,\"products\":[]}", word);
    answer(o, 200, body, (size_t)b);
    return;
  }
  if (!search_cache[w][limit]) {
    struct out b = {0};
    char tmp[256];
    int t = snprintf(tmp, sizeof tmp, "{\"query\":\"%s\",\"total\":%u,\"products\":[", word, n_postings[w]);
    out_put(&b, tmp, (size_t)t);
    for (long i = 0; i < limit && i < (long)n_postings[w]; i++) {
      if (i) out_put(&b, ",", 1);
      t = product_json(tmp, sizeof tmp, postings[w][i]);
      out_put(&b, tmp, (size_t)t);
    }
    out_put(&b, "]}", 2);
    search_cache[w][limit] = b.data, search_cache_len[w][limit] = b.len;
  }
  answer(o, 200, search_cache[w][limit], search_cache_len[w][limit]);
}

/* POST /cart/calculate: every "product_id" is paired with the "quantity"
   that follows it (1 if none before the next product_id). */
static void answer_cart(struct out *o, const char *body, size_t blen) {
  struct out b = {0};
  out_put(&b, "{\"items\":[", 10);
  uint64_t subtotal = 0;
  int items = 0;
  const char *end = body + blen, *p = body;
  char tmp[256];
  while ((p = memmem(p, (size_t)(end - p), "\"product_id\"", 12))) {
    p += 12;
    while (p < end && (*p == ':' || *p == ' ' || *p == '"')) p++;
    unsigned long id = strtoul(p, NULL, 10);
    const char *next = memmem(p, (size_t)(end - p), "\"product_id\"", 12);
    const char *qk = memmem(p, (size_t)((next ? next : end) - p), "\"quantity\"", 10);
    unsigned long qty = 1;
    if (qk) {
      qk += 10;
      while (qk < end && (*qk == ':' || *qk == ' ')) qk++;
      qty = strtoul(qk, NULL, 10);
    }
    if (id < 1 || id > N_PRODUCTS || qty < 1 || qty > 1000) {
      free(b.data);
      answer(o, 400, "{\"error\":\"bad item\"}", 20);
      return;
    }
    uint64_t line = (uint64_t)products[id].price_cents * qty;
    subtotal += line;
    int t = snprintf(tmp, sizeof tmp, "%s{\"product_id\":%lu,\"quantity\":%lu,\"unit_price\":%u.%02u,\"line_total\":%llu.%02llu}",
                     items++ ? "," : "", id, qty, products[id].price_cents / 100, products[id].price_cents % 100,
                     (unsigned long long)(line / 100), (unsigned long long)(line % 100));
    out_put(&b, tmp, (size_t)t);
  }
  uint64_t tax = (subtotal * 8 + 50) / 100, total = subtotal + tax;
  int t = snprintf(tmp, sizeof tmp, "],\"subtotal\":%llu.%02llu,\"tax\":%llu.%02llu,\"total\":%llu.%02llu}",
                   (unsigned long long)(subtotal / 100), (unsigned long long)(subtotal % 100),
                   (unsigned long long)(tax / 100), (unsigned long long)(tax % 100),
                   (unsigned long long)(total / 100), (unsigned long long)(total % 100));
  out_put(&b, tmp, (size_t)t);
  answer(o, 200, b.data, b.len);
  free(b.data);
}

static void route(struct out *o, const char *req, size_t hlen, const char *body, size_t blen) {
  n_requests++;
  const char *sp = memchr(req, ' ', hlen);
  if (!sp) { answer(o, 400, "{}", 2); return; }
  const char *path = sp + 1, *pend = memchr(path, ' ', hlen - (size_t)(path - req));
  if (!pend) { answer(o, 400, "{}", 2); return; }
  size_t plen = (size_t)(pend - path);
  if (!strncmp(req, "GET ", 4) && plen > 17 && !memcmp(path, "/products/search?", 17)) {
    answer_search(o, path + 17, plen - 17);
  } else if (!strncmp(req, "GET ", 4) && plen > 10 && !memcmp(path, "/products/", 10)) {
    char *e;
    unsigned long id = strtoul(path + 10, &e, 10);
    if (e != pend || id < 1 || id > N_PRODUCTS) { answer(o, 404, "{\"error\":\"no such product\"}", 27); return; }
    char tmp[256];
    int t = product_json(tmp, sizeof tmp, (uint32_t)id);
    answer(o, 200, tmp, (size_t)t);
  } else if (!strncmp(req, "POST ", 5) && plen == 15 && !memcmp(path, "/cart/calculate", 15)) {
    answer_cart(o, body, blen);
  } else {
    answer(o, 404, "{\"error\":\"not found\"}", 21);
  }
}

/* }====================================================== */

/* {====================================================== connections */

static void on_closed(uv_handle_t *h) {
  struct conn *c = h->data;
  free(c->buf);
  free(c);
}

static void conn_close(struct conn *c) {
  if (c->closing) return;
  c->closing = 1;
  uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static long header_long(const char *h, const char *end, const char *name) {
  size_t nl = strlen(name);
  for (const char *p = h; p < end; ) {
    const char *eol = memmem(p, (size_t)(end - p), "\r\n", 2);
    if (!eol) break;
    if ((size_t)(eol - p) > nl && p[nl] == ':' && !strncasecmp(p, name, nl)) return strtol(p + nl + 1, NULL, 10);
    p = eol + 2;
  }
  return -1;
}

struct wreq { uv_write_t w; char *data; };
static void on_written(uv_write_t *w, int status) {
  (void)status;
  free(((struct wreq *)w)->data);
  free(w);
}

static void flush_out(struct conn *c, struct out *o) {
  if (!o->len) { free(o->data); return; }
  uv_buf_t b = uv_buf_init(o->data, (unsigned)o->len);
  int k = uv_try_write((uv_stream_t *)&c->tcp, &b, 1);
  if (k == (int)o->len) { free(o->data); return; }
  if (k < 0 && k != UV_EAGAIN) { free(o->data); conn_close(c); return; }
  size_t done = k > 0 ? (size_t)k : 0;
  struct wreq *w = malloc(sizeof *w);
  if (!w) die("out of memory");
  w->data = o->data;
  b = uv_buf_init(o->data + done, (unsigned)(o->len - done));
  if (uv_write(&w->w, (uv_stream_t *)&c->tcp, &b, 1, on_written) < 0) { free(o->data); free(w); conn_close(c); }
}

static void parse_requests(struct conn *c) {
  size_t start = 0;
  struct out o = {0};
  for (;;) {
    char *p = c->buf + start;
    size_t left = c->len - start;
    char *hend = memmem(p, left, "\r\n\r\n", 4);
    if (!hend) break;
    size_t hlen = (size_t)(hend - p) + 4;
    long body = header_long(p, hend + 2, "Content-Length");
    if (body < 0) body = 0;
    if (hlen + (size_t)body > MAX_REQUEST) { free(o.data); conn_close(c); return; }
    if (left < hlen + (size_t)body) break;
    route(&o, p, hlen, p + hlen, (size_t)body);
    start += hlen + (size_t)body;
  }
  memmove(c->buf, c->buf + start, c->len - start);
  c->len -= start;
  flush_out(c, &o);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *b) {
  (void)suggested;
  struct conn *c = h->data;
  if (c->cap - c->len < 4096) {
    size_t ncap = c->cap ? c->cap * 2 : 8192;
    char *n = realloc(c->buf, ncap);
    if (!n) die("out of memory");
    c->buf = n, c->cap = ncap;
  }
  *b = uv_buf_init(c->buf + c->len, (unsigned)(c->cap - c->len));
}

static void on_read(uv_stream_t *s, ssize_t n, const uv_buf_t *b) {
  (void)b;
  struct conn *c = s->data;
  if (n < 0) { conn_close(c); return; }
  c->len += (size_t)n;
  parse_requests(c);
  if (c->len > MAX_REQUEST) conn_close(c);
}

static void on_connection(uv_stream_t *server, int status) {
  if (status < 0) return;
  struct conn *c = calloc(1, sizeof *c);
  if (!c) die("out of memory");
  uv_tcp_init(loop, &c->tcp);
  c->tcp.data = c;
  if (uv_accept(server, (uv_stream_t *)&c->tcp) < 0) { conn_close(c); return; }
  uv_tcp_nodelay(&c->tcp, 1);
  n_conns++;
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* }====================================================== */

static void on_signal(uv_signal_t *s, int sig) {
  (void)s, (void)sig;
  printf("API_JSON {\"requests\":%ld,\"connections_opened\":%ld}\n", n_requests, n_conns);
  fflush(stdout);
  exit(0);
}

int main(int argc, char **argv) {
  long port = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "-p") && i + 1 < argc) port = strtol(argv[++i], NULL, 10);
    else { fprintf(stderr, "usage: product_api [-p PORT]\n"); return 2; }
  }
  if (port < 0 || port > 65535) die("bad port");
  make_catalogue();
  loop = uv_default_loop();
  uv_tcp_t server;
  uv_tcp_init(loop, &server);
  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", (int)port, &addr);
  if (uv_tcp_bind(&server, (const struct sockaddr *)&addr, 0) || uv_listen((uv_stream_t *)&server, 4096, on_connection))
    die("cannot listen");
  struct sockaddr_storage got;
  int glen = sizeof got;
  uv_tcp_getsockname(&server, (struct sockaddr *)&got, &glen);
  printf("PORT %d\n", ntohs(((struct sockaddr_in *)&got)->sin_port));
  fflush(stdout);
  uv_signal_t sterm, sint;
  uv_signal_init(loop, &sterm);
  uv_signal_start(&sterm, on_signal, SIGTERM);
  uv_signal_init(loop, &sint);
  uv_signal_start(&sint, on_signal, SIGINT);
  return uv_run(loop, UV_RUN_DEFAULT);
}
