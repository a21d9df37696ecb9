//! The transformer: GGUF weights of the llama architecture and their forward pass, with a KV cache
//! that can be cut back to any prefix.
//!
//! The forward pass is our own rather than a graph of candle tensor operations. At this model size
//! (SmolLM2-135M: a decoding step is ~135 M multiply-adds, a few milliseconds of SIMD work on two
//! cores) candle's per-operation costs dominate: each of the ~15 operations per layer allocates a
//! tensor and dispatches to a thread pool, appending to a KV cache with `Tensor::cat` copies the
//! whole cache of every layer on every token, and grouped-query attention copies the keys and
//! values once more. Here the buffers are allocated once and reused (`cache.rs`), the KV cache
//! grows in place and is cut back by a length, grouped-query attention indexes the shared heads,
//! and the threads of one step meet at a light barrier between phases (`team.rs`, `forward.rs`).
//! candle still reads the GGUF and dequantizes what must be converted at load; the matrix products
//! use our kernel (`kernel.rs`): weights in 8-bit or 4-bit blocks packed four rows at a time,
//! activations quantized to 8 bits once per product, as llama.cpp does. Decoding is bound by
//! reading the weights from memory, so 4-bit weights stay 4-bit: the default model's Q4_1 is
//! used as stored (exact), as are Q4_0 and Q8_0; Q5_0/Q5_1 and k-quants become 8-bit blocks
//! (a small second rounding), or 4-bit blocks with the `q4_0` load target.
//!
//! Architectures (their choices read into [`Hparams`], in `hparams.rs`): `llama` (Llama 1/2/3,
//! SmolLM/SmolLM2, TinyLlama, Mistral without sliding window; Llama 3.1's frequency scaling as
//! the per-frequency factors its files store, `rope_freqs`); `qwen2` (Qwen2/Qwen2.5: biases on
//! the query, key and value products, and the rotation on the two halves of a head rather than on
//! interleaved pairs, as llama.cpp's "NEOX" rope); `qwen3` (Qwen3: no biases, but an RMS norm on
//! every query and key head before the rotation, and a head size of its own,
//! `attention.key_length`, not `embedding_length / head_count`); `phi3` (Phi-3/3.5, Phi-4-mini:
//! q|k|v and gate|up stored fused, cut apart at load from the stored bytes; the long-context
//! "longrope" factors per rotary frequency and the magnitude factor; Phi-4-mini rotates only the
//! first `rope.dimension_count` dimensions of a head); `gemma`, `gemma2`, `gemma3`
//! (embeddings times √n_embd, GELU, tied output; Gemma 2 and 3 add norms on each block's output
//! and sliding-window attention on some layers, Gemma 2 soft-caps scores and logits, Gemma 3
//! normalizes q/k heads and rotates its local layers with their own base); others are refused
//! with a clear error naming the supported ones.

mod cache;
mod forward;
mod hparams;
mod kernel;
mod load;
mod matrix;
mod ops;
mod team;

#[cfg(test)]
mod bench;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

pub use cache::KvCache;
pub use hparams::{Activation, Hparams, Rotation, SUPPORTED_ARCHITECTURES};
use matrix::Matrix;

use crate::error::EmbeddedError;

struct Layer {
    wq: Matrix,
    wk: Matrix,
    wv: Matrix,
    wo: Matrix,
    /// The q|k|v biases, concatenated as the products are gathered (empty: none).
    qkv_bias: Vec<f32>,
    /// The per-head query and key norm weights, `head_dim` each (empty: none).
    q_norm: Vec<f32>,
    k_norm: Vec<f32>,
    attn_norm: Vec<f32>,
    /// The norms of the attention and feed-forward outputs (empty: none).
    post_attn_norm: Vec<f32>,
    post_ffn_norm: Vec<f32>,
    w_gate: Matrix,
    w_down: Matrix,
    w_up: Matrix,
    ffn_norm: Vec<f32>,
    /// Which table of rotary angles the layer uses (Gemma 3's local layers have their own).
    rope: usize,
    /// Attends through the sliding window.
    local: bool,
}

/// Llama 3.1's per-frequency rotary factors (Llama 3.2 and later files have them too).
const ROPE_FREQS: &str = "rope_freqs.weight";

/// The weights (shared, read-only).
pub struct Weights {
    pub hparams: Hparams,
    embeddings: Matrix,
    layers: Vec<Layer>,
    out_norm: Vec<f32>,
    /// `None`: tied to the embeddings.
    output: Option<Matrix>,
    /// Rotary frequencies, one per pair of a head, per table ([`Layer::rope`]).
    thetas: Vec<Vec<f32>>,
    pub vocab_size: usize,
    /// How many tensors of the 4/5-bit types were converted at load (into our block layout, or
    /// re-quantized).
    pub requantized: usize,
    threads: usize,
}

/// The default thread count: the machine's (logical) CPUs.
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

impl Weights {
    /// Sets how many threads a forward pass uses (at least 1).
    pub fn set_threads(&mut self, n: usize) {
        self.threads = n.max(1);
    }

    pub fn threads(&self) -> usize {
        self.threads
    }

    /// Feeds `tokens` after what the cache holds and returns the logits of the last position.
    pub fn forward(&self, tokens: &[u32], cache: &mut KvCache) -> Result<Vec<f32>, EmbeddedError> {
        forward::forward(self, tokens, cache)
    }
}

/// Index of the largest value.
pub fn argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}
