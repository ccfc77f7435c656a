#!/usr/bin/env bash
# Starts N `stet serve` replicas on loopback ports and nginx in front of them
# (round-robin, deploy/nginx/stet.conf), in the foreground, as the current user,
# with nginx's prefix (config, logs, pid, temp) in a directory under /tmp.
# Refuses to serve unless every replica reports the same system_fingerprint:
# that is what makes round-robin return the same bytes whichever replica answers.
set -euo pipefail

usage() {
  cat <<'EOF'
Usage: deploy/run-replicas.sh [options] [-- stet serve options...]

  -n N             replicas (default 3)
  -p, --port P     nginx listens on 127.0.0.1:P (default 8080)
  --base-port B    replica i (1..N) listens on B+i-1 (default P+1); 0: each replica
                   lets the OS pick a free port
  -m, --model F    GGUF model for every replica (default: stet's default model)
  --stet BIN       stet binary (default $STET_BINARY, else build/bin/stet)
  --prefix DIR     nginx prefix and replica logs (default: a new /tmp/stet-nginx.XXXXXX)
  -h, --help

Everything after `--` goes to every `stet serve` (e.g. -- -t 1 --max-queue 128).
Prints one line per replica ("replica I http://127.0.0.1:PORT pid PID"), the
fingerprint, the nginx URL, then "ready". Ctrl-C / SIGTERM stops nginx and
drains the replicas (SIGTERM), then exits.
EOF
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
n=3
port=8080
base_port=""
model=""
stet="${STET_BINARY:-$root/build/bin/stet}"
prefix=""
serve_args=()

while [ $# -gt 0 ]; do
  case "$1" in
    -n) n="$2"; shift 2 ;;
    -p|--port) port="$2"; shift 2 ;;
    --base-port) base_port="$2"; shift 2 ;;
    -m|--model) model="$2"; shift 2 ;;
    --stet) stet="$2"; shift 2 ;;
    --prefix) prefix="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    --) shift; serve_args=("$@"); break ;;
    *) echo "run-replicas: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

die() { echo "run-replicas: $*" >&2; exit 1; }
[[ "$n" =~ ^[1-9][0-9]*$ ]] || die "-n must be a positive integer, not '$n'"
[[ "$port" =~ ^[0-9]+$ ]] || die "--port must be a number, not '$port'"
[ -n "$base_port" ] || base_port=$((port + 1))
[[ "$base_port" =~ ^[0-9]+$ ]] || die "--base-port must be a number, not '$base_port'"
[ -x "$stet" ] || die "no stet binary at $stet (build it, or pass --stet / set STET_BINARY)"
nginx="$(command -v nginx || true)"
[ -n "$nginx" ] || { [ -x /usr/sbin/nginx ] && nginx=/usr/sbin/nginx; } ||
  die "nginx not found (apt-get install nginx-light)"
conf_src="$here/nginx/stet.conf"
[ -f "$conf_src" ] || die "missing $conf_src"

# GET /health over bash's /dev/tcp (no curl needed); prints the HTTP status code.
health() {
  local code=""
  { exec 3<>"/dev/tcp/127.0.0.1/$1"; } 2>/dev/null || { echo 000; return; }
  printf 'GET /health HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
  read -r -t 5 _ code _ <&3 || true
  exec 3<&- 3>&-
  echo "${code:-000}"
}

if [ -z "$prefix" ]; then prefix="$(mktemp -d /tmp/stet-nginx.XXXXXX)"; fi
mkdir -p "$prefix/logs"
prefix="$(cd "$prefix" && pwd)"

pids=()
nginx_pid=""
stopping=0
cleanup() {
  [ "$stopping" = 1 ] && return
  stopping=1
  trap - INT TERM
  [ -n "$nginx_pid" ] && kill -TERM "$nginx_pid" 2>/dev/null || true
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  # Replicas drain their requests in flight (up to their --drain-timeout).
  for p in "${pids[@]}" $nginx_pid; do wait "$p" 2>/dev/null || true; done
}
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM
trap cleanup EXIT

model_args=()
[ -n "$model" ] && model_args=(-m "$model")

# Start the replicas. Each one's stderr (load progress, one JSON line per
# request) goes to $prefix/logs/replica-I.log.
for i in $(seq 1 "$n"); do
  p=0
  [ "$base_port" != 0 ] && p=$((base_port + i - 1))
  "$stet" serve "${model_args[@]}" --host 127.0.0.1 --port "$p" "${serve_args[@]}" \
    </dev/null >/dev/null 2>"$prefix/logs/replica-$i.log" &
  pids+=($!)
done

# Wait for each replica's "listening on" line (printed once the model is loaded).
ports=()
fingerprints=()
for i in $(seq 1 "$n"); do
  log="$prefix/logs/replica-$i.log"
  pid="${pids[$((i - 1))]}"
  for _ in $(seq 1 1200); do
    grep -q '^listening on ' "$log" && break
    kill -0 "$pid" 2>/dev/null || { cat "$log" >&2; die "replica $i exited during startup"; }
    sleep 0.1
  done
  grep -q '^listening on ' "$log" || { cat "$log" >&2; die "replica $i not ready after 120 s"; }
  ports+=("$(sed -n 's|^listening on http://127\.0\.0\.1:\([0-9]*\).*|\1|p' "$log" | head -1)")
  fingerprints+=("$(sed -n 's|.*fingerprint \(fp_[A-Za-z0-9_-]*\).*|\1|p' "$log" | head -1)")
  echo "replica $i http://127.0.0.1:${ports[$((i - 1))]} pid $pid"
done

# Same fingerprint everywhere, or round-robin would mix numerics.
[ -n "${fingerprints[0]}" ] || die "no fingerprint in $prefix/logs/replica-1.log"
for i in $(seq 2 "$n"); do
  [ "${fingerprints[$((i - 1))]}" = "${fingerprints[0]}" ] ||
    die "replica $i has fingerprint ${fingerprints[$((i - 1))]}, replica 1 has ${fingerprints[0]}:" \
        "replicas must run the same model file, --kv-type and --numerics"
done
echo "fingerprint ${fingerprints[0]}"

# nginx.conf: stet.conf with this run's upstream servers and listen port.
servers=""
for p in "${ports[@]}"; do
  servers+="        server 127.0.0.1:$p max_fails=3 fail_timeout=10s;"$'\n'
done
conf="$prefix/nginx.conf"
{
  # Run as root, nginx would switch its workers to "nobody", who cannot enter
  # the 0700 prefix; keep them as the current user.
  [ "$(id -u)" = 0 ] && echo "user $(id -un) $(id -gn);"
  awk -v servers="$servers" -v port="$port" '
    /# BEGIN replicas/ { print; printf "%s", servers; skip = 1; next }
    /# END replicas/   { skip = 0 }
    skip               { next }
    /^[ \t]*listen 127\.0\.0\.1:[0-9]+;/ { sub(/:[0-9]+;/, ":" port ";") }
    { print }' "$conf_src"
} >"$conf"

"$nginx" -p "$prefix" -c "$conf" -e stderr -t -q || die "nginx rejected $conf"
"$nginx" -p "$prefix" -c "$conf" -e stderr -g 'daemon off;' </dev/null &
nginx_pid=$!

for _ in $(seq 1 100); do
  code="$(health "$port")"
  [ "$code" = 200 ] && break
  kill -0 "$nginx_pid" 2>/dev/null || die "nginx exited (is port $port free?)"
  sleep 0.1
done
[ "$code" = 200 ] || die "nginx on port $port did not answer /health"
echo "nginx http://127.0.0.1:$port pid $nginx_pid prefix $prefix"
echo "ready"

# Stay in the foreground until a signal, or until nginx or any replica exits.
set +e
wait -n "${pids[@]}" "$nginx_pid"
rc=$?
echo "run-replicas: a process exited (status $rc); stopping the rest" >&2
exit 1
