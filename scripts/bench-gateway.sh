#!/usr/bin/env bash
# Gateway benchmark, loopback only and bounded: runs the scripted upstream (testkit-upstream,
# answering every request with a prompt-mode `<tool_call>` reply) and `toolbridge serve` in front
# of it, and measures direct-to-upstream against through-the-gateway at 1 and 50 connections,
# streaming and not, with a tool in prompt mode. Reports requests/s, p50/p99 latency, the
# gateway's CPU time per request (utime+stime from /proc) and its peak RSS (VmHWM).
#
#   scripts/bench-gateway.sh            # REQUESTS_1=3000 REQUESTS_50=20000 by default
#   REQUESTS_1=1000 REQUESTS_50=5000 scripts/bench-gateway.sh
#   WORKERS=1 scripts/bench-gateway.sh  # [server] worker_threads (default 0: one per core)
#
# Every server it starts listens on 127.0.0.1, exits by itself within MAX_SECONDS (default 900)
# and is stopped by id when the script ends.
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS_1="${REQUESTS_1:-3000}"
REQUESTS_50="${REQUESTS_50:-20000}"
MAX_SECONDS="${MAX_SECONDS:-900}"
PER_RUN_SECONDS="${PER_RUN_SECONDS:-60}"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-target}"

if [ -z "${NO_BUILD:-}" ]; then   # NO_BUILD=1 reuses the release binaries already built
    cargo build --quiet --release -p toolbridge-cli --bin toolbridge
    cargo build --quiet --release -p toolbridge-testkit --bin testkit-upstream
    cargo build --quiet --release -p toolbridge-gateway --example loadgen
fi
BIN="$CARGO_TARGET_DIR/release"
LOADGEN="$BIN/examples/loadgen"

WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

"$BIN/testkit-upstream" --max-seconds "$MAX_SECONDS" >"$WORK/upstream.out" &
PIDS+=($!)
for _ in $(seq 100); do [ -s "$WORK/upstream.out" ] && break; sleep 0.05; done
UPSTREAM="$(head -n1 "$WORK/upstream.out")"   # http://127.0.0.1:PORT/v1

cat >"$WORK/toolbridge.toml" <<EOF
[server]
listen = "127.0.0.1:0"
rate_limit_per_minute = 0   # measuring throughput, not the limiter
worker_threads = ${WORKERS:-0}

[[models]]
name = "local"
base_url = "$UPSTREAM"
upstream_model = "mock-model"
tool_mode = "prompt"
EOF
env -u TOOLBRIDGE_API_KEYS RUST_LOG=warn "$BIN/toolbridge" serve --config "$WORK/toolbridge.toml" 2>"$WORK/gateway.err" &
GW_PID=$!
PIDS+=("$GW_PID")
# The gateway stops by itself too.
( sleep "$MAX_SECONDS"; kill "$GW_PID" 2>/dev/null ) &
PIDS+=($!)
for _ in $(seq 200); do grep -q 'on http://' "$WORK/gateway.err" 2>/dev/null && break; sleep 0.05; done
GATEWAY="$(grep -o 'http://127.0.0.1:[0-9]*/v1' "$WORK/gateway.err" | head -n1)"
[ -n "$GATEWAY" ] || { cat "$WORK/gateway.err"; exit 1; }

TICKS="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$GW_PID/stat"; }

run() { # target stream connections requests -> one line of loadgen output
    local url="$1" stream="$2" conns="$3" n="$4" expect
    local flags=(--url "$url/chat/completions" --model local --connections "$conns"
                 --requests "$n" --max-seconds "$PER_RUN_SECONDS")
    if [ "$stream" = yes ]; then flags+=(--stream --expect '[DONE]'); else expect='tool_call'; flags+=(--expect "$expect"); fi
    "$LOADGEN" "${flags[@]}"
}

field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "load: $(uptime)"
echo "upstream $UPSTREAM, gateway $GATEWAY (pid $GW_PID, worker_threads ${WORKERS:-0})"
# Warm-up: connections, allocator, page cache.
run "$GATEWAY" no 4 500 >/dev/null
run "$GATEWAY" yes 4 500 >/dev/null
run "$UPSTREAM" no 4 500 >/dev/null

printf '\n| target | stream | conns | requests | errors | req/s | p50 ms | p99 ms | gateway CPU ms/req |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
for conns in 1 50; do
    n=$REQUESTS_1; [ "$conns" = 50 ] && n=$REQUESTS_50
    for stream in no yes; do
        for target in direct gateway; do
            url="$UPSTREAM"; [ "$target" = gateway ] && url="$GATEWAY"
            before=$(cpu_ticks)
            out="$(run "$url" "$stream" "$conns" "$n")"
            after=$(cpu_ticks)
            done_n=$(field requests "$out")
            cpu="-"
            if [ "$target" = gateway ] && [ "$done_n" -gt 0 ]; then
                cpu=$(awk -v d="$((after - before))" -v t="$TICKS" -v n="$done_n" 'BEGIN{printf "%.4f", d * 1000 / t / n}')
            fi
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$target" "$stream" "$conns" \
                "$done_n" "$(field errors "$out")" "$(field rps "$out")" "$(field p50_ms "$out")" \
                "$(field p99_ms "$out")" "$cpu"
        done
    done
done
echo
echo "gateway peak RSS (VmHWM): $(awk '/VmHWM/{print $2, $3}' "/proc/$GW_PID/status")"
echo "load: $(uptime)"
