#!/usr/bin/env bash
# Gateway benchmark, loopback only and bounded: runs the scripted upstream (testkit-upstream,
# answering every request with a prompt-mode `<tool_call>` reply) and `toolbridge serve` in front
# of it, and measures direct-to-upstream against through-the-gateway at 1 and 50 connections,
# streaming and not, with a tool in prompt mode: Chat Completions, the same request through the
# Messages API, and through the Responses API (the tool a client function, so each response
# ends paused with a `function_call` item; stored, state in SQLite in the scratch folder: two
# writes per response). Reports requests/s, p50/p99 latency, the gateway's CPU time per request
# (utime+stime from /proc) and its peak RSS (VmHWM), then the figures at one connection side by
# side: CPU per request and the p50 added over going to the upstream directly.
#
#   scripts/bench-gateway.sh            # REQUESTS_1=3000 REQUESTS_50=20000 by default
#   REQUESTS_1=1000 REQUESTS_50=5000 scripts/bench-gateway.sh
#   WORKERS=1 scripts/bench-gateway.sh  # [server] worker_threads (default 0: one per core)
#   CONNS=1 scripts/bench-gateway.sh    # connection counts to measure (default "1 50")
#   TARGETS="direct responses" scripts/bench-gateway.sh  # rows to measure (default: all four;
#                                       # `gateway` = /v1/chat/completions, `messages` = /v1/messages,
#                                       # `responses` = /v1/responses)
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

[server.state]
path = "$WORK/state.sqlite3"

[server.responses]
max_concurrent_per_user = 0   # 50 connections are one (keyless) user
instance = "bench"
EOF
env -u TOOLBRIDGE_API_KEYS RUST_LOG=warn "$BIN/toolbridge" serve --config "$WORK/toolbridge.toml" 2>"$WORK/gateway.err" &
GW_PID=$!
PIDS+=("$GW_PID")
# The gateway stops by itself too. The watchdog takes its sleep down with it when the script
# ends (else the orphaned sleep holds the script's stdout open, and a `| tee` waits for it).
( sleep "$MAX_SECONDS" & s=$!; trap 'kill $s 2>/dev/null; exit 0' TERM; wait $s; kill "$GW_PID" 2>/dev/null ) &
PIDS+=($!)
for _ in $(seq 200); do grep -q 'on http://' "$WORK/gateway.err" 2>/dev/null && break; sleep 0.05; done
GATEWAY="$(grep -o 'http://127.0.0.1:[0-9]*/v1' "$WORK/gateway.err" | head -n1)"
[ -n "$GATEWAY" ] || { cat "$WORK/gateway.err"; exit 1; }

TICKS="$(getconf CLK_TCK)"
cpu_ticks() { awk '{print $14 + $15}' "/proc/$GW_PID/stat"; }
# Context switches of all the gateway's threads: each is a sleep and a wake-up, which on a
# virtual machine costs more the idler the machine is, so CPU per request varies with the
# machine's load while this count does not.
switches() { cat /proc/"$GW_PID"/task/*/status 2>/dev/null | awk '/ctxt_switches/{n += $2} END {print n + 0}'; }

run() { # target stream connections requests [api] -> one line of loadgen output
    local url="$1" stream="$2" conns="$3" n="$4" api="${5:-chat}" expect
    local flags=(--model local --connections "$conns" --requests "$n" --max-seconds "$PER_RUN_SECONDS")
    if [ "$api" = messages ]; then
        # /v1/messages: the same request in Anthropic's form; the answer is a tool_use block.
        flags+=(--url "${url%/v1}/v1/messages" --messages)
        if [ "$stream" = yes ]; then flags+=(--stream --expect 'message_stop'); else flags+=(--expect 'tool_use'); fi
    elif [ "$api" = responses ]; then
        # /v1/responses: the answer is a function_call item (the run pauses for the client).
        flags+=(--url "${url%/v1}/v1/responses" --responses)
        if [ "$stream" = yes ]; then flags+=(--stream --expect 'response.completed'); else flags+=(--expect '"type":"function_call"'); fi
    else
        flags+=(--url "$url/chat/completions")
        if [ "$stream" = yes ]; then flags+=(--stream --expect '[DONE]'); else expect='tool_call'; flags+=(--expect "$expect"); fi
    fi
    "$LOADGEN" "${flags[@]}"
}

field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "load: $(uptime)"
echo "upstream $UPSTREAM, gateway $GATEWAY (pid $GW_PID, worker_threads ${WORKERS:-0})"
# Warm-up: connections, allocator, page cache.
run "$GATEWAY" no 4 500 >/dev/null
run "$GATEWAY" yes 4 500 >/dev/null
run "$UPSTREAM" no 4 500 >/dev/null
run "$GATEWAY" no 4 500 messages >/dev/null
run "$GATEWAY" no 4 500 responses >/dev/null
run "$GATEWAY" yes 4 500 responses >/dev/null

printf '\n| target | stream | conns | requests | errors | req/s | p50 ms | p99 ms | gateway CPU ms/req | switches/req |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
# `gateway` is /v1/chat/completions, `messages` the same request through /v1/messages,
# `responses` through /v1/responses; all against the same OpenAI-compatible upstream that
# `direct` measures.
declare -A P50 CPU SW
for conns in ${CONNS:-1 50}; do
    n=$REQUESTS_1; [ "$conns" = 50 ] && n=$REQUESTS_50
    for stream in no yes; do
        for target in ${TARGETS:-direct gateway messages responses}; do
            url="$UPSTREAM"; api=chat
            [ "$target" != direct ] && url="$GATEWAY"
            [ "$target" = messages ] && api=messages
            [ "$target" = responses ] && api=responses
            before=$(cpu_ticks); sw_before=$(switches)
            out="$(run "$url" "$stream" "$conns" "$n" "$api")"
            after=$(cpu_ticks); sw_after=$(switches)
            done_n=$(field requests "$out")
            cpu="-"; sw="-"
            if [ "$target" != direct ] && [ "$done_n" -gt 0 ]; then
                cpu=$(awk -v d="$((after - before))" -v t="$TICKS" -v n="$done_n" 'BEGIN{printf "%.4f", d * 1000 / t / n}')
                sw=$(awk -v d="$((sw_after - sw_before))" -v n="$done_n" 'BEGIN{printf "%.2f", d / n}')
            fi
            printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$target" "$stream" "$conns" \
                "$done_n" "$(field errors "$out")" "$(field rps "$out")" "$(field p50_ms "$out")" \
                "$(field p99_ms "$out")" "$cpu" "$sw"
            P50["$target/$stream/$conns"]="$(field p50_ms "$out")"
            CPU["$target/$stream/$conns"]="$cpu"
            SW["$target/$stream/$conns"]="$sw"
        done
    done
done

# One connection, side by side: what the gateway costs over going to the upstream directly.
if [ -n "${P50[direct/no/1]:-}" ]; then
    printf '\n| at 1 connection | stream | gateway CPU ms/req | added p50 ms | switches/req |\n'
    printf '|---|---|---|---|---|\n'
    for stream in no yes; do
        for target in ${TARGETS:-direct gateway messages responses}; do
            [ "$target" = direct ] && continue
            added=$(awk -v g="${P50[$target/$stream/1]}" -v d="${P50[direct/$stream/1]}" 'BEGIN{printf "%+.3f", g - d}')
            label="$target"
            [ "$target" = gateway ] && label="chat completions"
            printf '| %s | %s | %s | %s | %s |\n' "$label" "$stream" "${CPU[$target/$stream/1]}" "$added" "${SW[$target/$stream/1]}"
        done
    done
fi
echo
echo "gateway peak RSS (VmHWM): $(awk '/VmHWM/{print $2, $3}' "/proc/$GW_PID/status")"
echo "load: $(uptime)"
