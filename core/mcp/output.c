/* output.c — what goes out in a round of the engine's work: each outlet's
 * lines are batched in its buffer (output_of) and handed to its transport
 * once at the round's end (output_flush_all: one write per stream, not one
 * per line), and the replies every method writes. */
#include "server_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "access_log.h"
#include "json.h"

buf *output_of(server *srv, outlet *o) {
  if (!o->dirty) {
    if (srv->ndirty == srv->dirty_cap) {
      srv->dirty_cap = srv->dirty_cap ? srv->dirty_cap * 2 : 8;
      srv->dirty = realloc(srv->dirty, srv->dirty_cap * sizeof *srv->dirty);
    }
    srv->dirty[srv->ndirty++] = o;
    o->dirty = true;
  }
  return &o->out;
}

void output_flush(outlet *o) {
  if (o->out.len && !o->dead && !o->write(o, o->out.p, o->out.len)) o->dead = true;
  o->out.len = 0;
  o->dirty = false;
}

void output_flush_all(void *ud) {
  server *srv = ud;
  for (size_t i = 0; i < srv->ndirty; i++) output_flush(srv->dirty[i]);
  srv->ndirty = 0;
  access_log_flush();
}

/* The request o answers is over: hand over what is left and let the
   transport close it. o must not be used afterwards. */
void output_done(server *srv, outlet *o) {
  if (!o || !o->finish) return;
  if (o->dirty) {
    for (size_t i = 0; i < srv->ndirty; i++)
      if (srv->dirty[i] == o) {
        srv->dirty[i] = srv->dirty[--srv->ndirty];
        break;
      }
    if (o->finish_with && o->out.len && !o->dead) { /* the last bytes and the end, in one hand-off */
      buf last = o->out; /* taken first: finishing may free o */
      buf_init(&o->out);
      o->finish_with(o, last.p, last.len);
      buf_free(&last);
      return;
    }
    output_flush(o);
  }
  buf_free(&o->out);
  o->finish(o);
}

buf *output_reply(server *srv, outlet *o) {
  o->answered = true;
  o->error_code = 0;
  buf *b = output_of(srv, o);
  o->answer_at = b->len;
  return b;
}

size_t output_answer_bytes(const outlet *o) {
  return o && o->answered && o->out.len >= o->answer_at ? o->out.len - o->answer_at : 0;
}

void output_error(server *srv, outlet *o, json_span id, int code, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  output_rpc_error(srv, o, id, code, msg, NULL);
}

void output_rpc_error(server *srv, outlet *o, json_span id, int code, const char *msg,
                      const char *data) {
  buf *b = output_reply(srv, o);
  o->error_code = code;
  size_t n = strnlen(msg, sizeof o->error_message - 1); /* cut short on purpose, */
  if (msg[n]) /* then not inside a UTF-8 sequence (a span's text must be UTF-8) */
    while (n > 0 && ((unsigned char)msg[n] & 0xC0) == 0x80) n--;
  memcpy(o->error_message, msg, n);
  o->error_message[n] = '\0';
  jsonrpc_write_error(b, id, code, msg, data);
}

void output_json(server *srv, outlet *o, json_span id, const char *json, size_t n) {
  jsonrpc_write_result(output_reply(srv, o), id, json, n);
}

void output_tool_error(server *srv, const client_view *cv, buf *out, json_span id, const char *msg,
                      size_t n) {
  jsonrpc_begin_result(out, id);
  buf_puts(out, "{\"content\":[{\"type\":\"text\",\"text\":");
  json_encode_string(out, msg, n);
  buf_puts(out, "}],\"isError\":true");
  output_result_tail(srv, cv, out);
  buf_putc(out, '}');
  jsonrpc_end_reply(out);
}

void output_result_tail(server *srv, const client_view *cv, buf *out) {
  if (!proto_per_request(cv->version)) return;
  const registry *r = engine_app(srv->e)->reg;
  buf_put(out, r->complete_tail, r->complete_tail_len);
}

