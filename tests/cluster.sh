# tests/cluster.sh — sourced by the scripts that put luamcp instances behind
# nginx with a redis-server (tests/conformance/run.sh --instances,
# bench/cluster/run.sh): free loopback ports, our own redis-server and
# nginx (deploy/nginx/luamcp.conf with its ports replaced), and stopping
# only what was started here. The caller starts the instances.
#
#   cluster_init DIR          DIR: a fresh folder for configs and logs (made 755:
#                             nginx's workers run as nobody when we are root)
#   cluster_port              a free loopback port (printed)
#   cluster_wait_port PORT    until something accepts on PORT (10 s), else 1
#   cluster_redis             start redis-server; sets CLUSTER_REDIS_URL, CLUSTER_REDIS_PID
#   cluster_nginx_conf PORT UPSTREAM...   write DIR/nginx/ for nginx on PORT in
#                             front of the instance ports (1 to 3: upstreams
#                             a, b, c of the deployment file); again to change them
#   cluster_nginx PORT UPSTREAM...        write it and start nginx; sets
#                             CLUSTER_NGINX_PID and CLUSTER_NGINX_URL
#   cluster_track PID         stop PID with the others
#   cluster_stop              SIGTERM (nginx: SIGQUIT) to everything tracked, then wait
# Needs redis-server and nginx (Debian's nginx or nginx-light).

CLUSTER_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
CLUSTER_PIDS=()

cluster_init() {
  CLUSTER_DIR="$1"
  mkdir -p "$CLUSTER_DIR"
  chmod 755 "$CLUSTER_DIR"
}

cluster_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

cluster_wait_port() {
  for _ in $(seq 200); do
    (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
    sleep 0.05
  done
  echo "cluster: nothing listens on 127.0.0.1:$1 after 10 s" >&2
  return 1
}

cluster_track() { CLUSTER_PIDS+=("$1"); }

cluster_redis() {
  local p
  p=$(cluster_port)
  redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
    </dev/null >"$CLUSTER_DIR/redis.log" 2>&1 &
  CLUSTER_REDIS_PID=$!
  cluster_track $!
  cluster_wait_port "$p" || { cat "$CLUSTER_DIR/redis.log" >&2; return 1; }
  CLUSTER_REDIS_URL="redis://127.0.0.1:$p/0"
}

cluster_nginx_conf() {
  local port=$1 a=$2 b=${3:-} c=${4:-}
  local n="$CLUSTER_DIR/nginx" drop=()
  mkdir -p "$n"
  # instances the deployment file has and this run has not: their lines go
  [ -n "$b" ] || drop+=(-e '/8102/d' -e '/luamcp_b/d')
  [ -n "$c" ] || drop+=(-e '/8103/d' -e '/luamcp_c/d')
  sed "${drop[@]}" -e "s/127.0.0.1:8101/127.0.0.1:$a/" -e "s/127.0.0.1:8102/127.0.0.1:$b/" \
      -e "s/127.0.0.1:8103/127.0.0.1:$c/" -e "s/listen 127.0.0.1:8080;/listen 127.0.0.1:$port;/" \
      "$CLUSTER_ROOT/deploy/nginx/luamcp.conf" >"$n/luamcp.conf"
  cat >"$n/nginx.conf" <<NGX
worker_processes 1;
pid $n/nginx.pid;
error_log $n/error.log warn;
events { worker_connections 1024; }
http { access_log off; client_body_temp_path $n/body; proxy_temp_path $n/proxy;
  include $n/luamcp.conf; }
NGX
}

cluster_nginx() {
  local port=$1
  cluster_nginx_conf "$@"
  local n="$CLUSTER_DIR/nginx"
  nginx -p "$n" -c "$n/nginx.conf" -e "$n/error.log" -g 'daemon off;' </dev/null >>"$n/error.log" 2>&1 &
  CLUSTER_NGINX_PID=$!
  cluster_track "$CLUSTER_NGINX_PID"
  cluster_wait_port "$port" || { cat "$n/error.log" >&2; return 1; }
  CLUSTER_NGINX_URL="http://127.0.0.1:$port/mcp"
}

cluster_stop() {
  local p
  for p in "${CLUSTER_PIDS[@]}"; do
    if [ "$p" = "${CLUSTER_NGINX_PID:-}" ]; then kill -QUIT "$p" 2>/dev/null || true
    else kill "$p" 2>/dev/null || true; fi
  done
  for p in "${CLUSTER_PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  CLUSTER_PIDS=()
}
