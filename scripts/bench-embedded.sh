#!/usr/bin/env bash
# Benchmark of the embedded model against llama.cpp on the same GGUF, prompt and thread count.
#   scripts/bench-embedded.sh [MODEL.gguf] [THREADS]
# MODEL defaults to the pulled default model (toolbridge model pull); THREADS to 2. The llama.cpp
# side runs when a Python with llama-cpp-python is given in LLAMA_CPP_PYTHON (default
# /tmp/llamacpp/venv/bin/python, skipped when absent). Generation length: BENCH_TOKENS (128).
#   scripts/bench-embedded.sh --architectures
# runs instead our forward pass against the candle reference on random-weight models of a realistic
# shape for each architecture (src/model/bench.rs; TB_BENCH_ARCHS=phi3,gemma2 picks some).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--architectures" ]; then
    cargo test --quiet -p toolbridge-embedded --lib model::bench -- --ignored --nocapture | grep BENCH
    exit 0
fi
MODEL="${1:-${XDG_CACHE_HOME:-$HOME/.cache}/toolbridge/models/SmolLM2-135M-Instruct.Q4_1.gguf}"
THREADS="${2:-2}"
export BENCH_TOKENS="${BENCH_TOKENS:-128}"
PY="${LLAMA_CPP_PYTHON:-/tmp/llamacpp/venv/bin/python}"

echo "== toolbridge-embedded (own forward pass, Q4_x/Q8_0 blocks as stored, AVX2 kernels)"
cargo run --quiet --release -p toolbridge-embedded --example bench -- "$MODEL" "$THREADS" | tee /tmp/tb-bench-ours.txt

if [ -x "$PY" ] && "$PY" -c 'import llama_cpp' 2>/dev/null; then
    echo "== llama.cpp (llama-cpp-python), same prompt, same threads"
    "$PY" - "$MODEL" "$THREADS" "$BENCH_TOKENS" <<'PY' | tee /tmp/tb-bench-llamacpp.txt
import resource, sys, time
from llama_cpp import Llama
model, threads, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
prompt = "Write a short story about a robot who learns to paint. Describe the colours it discovers, the first painting it makes, and what the other robots think of it."
t = time.time()
llm = Llama(model_path=model, n_threads=threads, n_threads_batch=threads, n_ctx=2048, verbose=False)
print(f"load: {time.time() - t:.2f} s")
# The same text as the GGUF template renders for the Rust side (its default system prompt).
text = f"<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n"
tokens = llm.tokenize(text.encode(), add_bos=False, special=True)
llm.eval(tokens[:4]); llm.reset()  # warm-up
t = time.time(); llm.eval(tokens); pp_s = time.time() - t
t = time.time(); out = 0
for tok in llm.generate([], temp=0.0, reset=False):
    out += 1
    if out >= n: break
    # generate() was started after eval(), so it continues from the prompt
tg_s = time.time() - t
pp, tg = len(tokens) / pp_s, out / tg_s
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"prompt: {len(tokens)} tokens = {pp:.1f} tok/s")
print(f"generation: {out} tokens = {tg:.1f} tok/s")
print(f"peak RSS: {rss:.1f} MiB")
print(f"RESULT pp={pp:.1f} tg={tg:.1f}")
PY
    ours=$(grep RESULT /tmp/tb-bench-ours.txt | sed 's/.*tg=//')
    theirs=$(grep RESULT /tmp/tb-bench-llamacpp.txt | sed 's/.*tg=//')
    python3 -c "print(f'generation speed ratio (ours / llama.cpp): {float($ours) / float($theirs):.2f}x')"
else
    echo "(llama.cpp comparison skipped: set LLAMA_CPP_PYTHON to a Python with llama-cpp-python)"
fi
