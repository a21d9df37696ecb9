#!/usr/bin/env bash
# The whole test suite: what the README's second set-up command and CI (.ci/run) run.
# It installs what the tests need, then runs every test of the workspace.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"
cargo test --workspace --locked
