/* mount.c — mcp.mount's lists: after each load that declares a mount (the
 * first and every reload), the server sends itself the internal request
 * luamcp/mount/refresh, which runs lua/client.lua's refresh as a call on
 * the engine (so it may park on the upstreams, bounded by --timeout) with
 * no client of ours waiting. The refresh lists each mounted upstream and
 * keeps what it found (process-wide, across versions); when that differs
 * from what the version serving was loaded with, it answers "changed" and
 * the app is loaded again: the new version registers the upstream's items
 * and publish() tells our clients, as for an edited script. A load never
 * waits on an upstream. */
#include <stdlib.h>
#include <string.h>

#include <lauxlib.h>
#include <lua.h>

#include "mount.h"

#include "log.h"
#include "reload.h"
#include "server_internal.h"

/* what the call's result path reads of "its tool" (results.c) */
static char refresh_name[] = "luamcp/mount/refresh", refresh_where[] = "mount.lua";
static const reg_tool refresh_tool = {.name = refresh_name, .handler = LUA_NOREF, .input = LUA_NOREF,
                                      .output = LUA_NOREF, .headers = LUA_NOREF, .where = refresh_where};

static const char refresh_msg[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"luamcp/mount/refresh\"}";

typedef struct mount_outlet {
  outlet out;
  server *srv;
  buf got;
} mount_outlet;

static bool mo_write(outlet *o, const char *p, size_t n) {
  buf_put(&((mount_outlet *)o)->got, p, n);
  return true;
}

static void mount_start(server *srv);

static void mo_finish(outlet *o) {
  mount_outlet *mo = (mount_outlet *)o;
  server *srv = mo->srv;
  buf_putc(&mo->got, '\0');
  const char *g = mo->got.p ? mo->got.p : "";
  /* the refresh's text result: "changed", "same", or why it failed */
  if (strstr(g, "\"text\":\"changed\"")) {
    log_msg(LOG_INFO, "mcp.mount: an upstream's list changed: loading the app again");
    reload_request(srv);
  } else if (!strstr(g, "\"text\":\"same\"")) {
    log_msg(LOG_WARNING, "mcp.mount: the refresh of mounted upstreams failed: %.600s", g);
  }
  buf_free(&mo->got);
  buf_free(&mo->out.out);
  free(mo);
  srv->mount_running = false;
  if (srv->mount_again) {
    srv->mount_again = false;
    mount_start(srv);
  }
}

static void mo_finish_with(outlet *o, const char *p, size_t n) {
  mo_write(o, p, n);
  mo_finish(o);
}

static void mount_start(server *srv) {
  if (engine_finishing(srv->e) || engine_app(srv->e)->reg->mount_refresh == LUA_NOREF) return;
  if (srv->mount_running) { /* one at a time; a load during it lists again after */
    srv->mount_again = true;
    return;
  }
  srv->mount_running = true;
  mount_outlet *mo = calloc(1, sizeof *mo);
  mo->srv = srv;
  buf_init(&mo->got), buf_init(&mo->out.out);
  mo->out.write = mo_write;
  mo->out.finish = mo_finish;
  mo->out.finish_with = mo_finish_with;
  session *s = session_new();
  s->ephemeral = true;
  s->internal = true;
  s->version = PROTO_LATEST_SESSION;
  s->initialized = s->ready = true;
  server_inject_as(srv, s, &mo->out, refresh_msg, sizeof refresh_msg - 1, NULL);
  session_unref(s);
}

static void on_mount_timer(uv_timer_t *t) { mount_start(t->data); }

static void mount_close(server *srv) { uv_close((uv_handle_t *)&srv->mount_timer, NULL); }

static void mount_refresh_soon(server *srv) {
  if (engine_app(srv->e)->reg->mount_refresh == LUA_NOREF) return;
  uv_timer_start(&srv->mount_timer, on_mount_timer, 0, 0); /* on the loop, with the run lock */
}

/* luamcp/mount/refresh, from our own session (methods.c answers any
   client "Method not found", as for any method we do not have). */
static void mount_request(server *srv, inmsg *im) {
  const registry *reg = engine_app(srv->e)->reg;
  if (reg->mount_refresh == LUA_NOREF) {
    output_error(srv, im->reply, im->m.id, JSONRPC_METHOD_NOT_FOUND, "Method not found: luamcp/mount/refresh");
    return;
  }
  call *c = request_new(srv, im, CALL_TOOL, (json_span){0}, NULL);
  request_of(c)->tool = &refresh_tool;
  request_of(c)->item_name = refresh_tool.name;
  lua_rawgeti(call_thread(c), LUA_REGISTRYINDEX, reg->mount_refresh);
  call_start(srv->e, c, 0);
}

void mount_attach(server *srv) {
  uv_timer_init(engine_loop(srv->e), &srv->mount_timer);
  srv->mount_timer.data = srv;
  srv->mount_published = mount_refresh_soon;
  srv->mount_request = mount_request;
  srv->mount_close = mount_close;
  mount_refresh_soon(srv);
}
