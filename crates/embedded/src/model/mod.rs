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
mod matrix;
mod ops;
mod team;

#[cfg(test)]
mod bench;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;

pub use cache::KvCache;
pub use hparams::{Activation, Hparams, Rotation, SUPPORTED_ARCHITECTURES};
use matrix::{dequantize_all, Matrix};

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
    /// Loads the weights (see the module documentation for the conversions).
    pub fn load<R: Read + Seek>(ct: &Content, reader: &mut R) -> Result<Weights, EmbeddedError> {
        Weights::load_as(ct, reader, GgmlDType::Q8_0)
    }

    /// Loads the weights; `target` Q4_0 converts 5-bit weights to 4-bit blocks (smaller and
    /// faster, a second rounding), any other keeps them 8-bit.
    pub fn load_as<R: Read + Seek>(
        ct: &Content,
        reader: &mut R,
        target: GgmlDType,
    ) -> Result<Weights, EmbeddedError> {
        let hp = Hparams::from_gguf(ct)?;
        if hp.n_head == 0 || hp.n_kv_head == 0 || !hp.n_head.is_multiple_of(hp.n_kv_head) {
            return Err(EmbeddedError::Format(format!(
                "bad head counts {} / {}",
                hp.n_head, hp.n_kv_head
            )));
        }
        // Heads may not tile the stream only where the file states their size (Qwen3, the
        // Gemmas): the output matrix maps them back.
        let stated = ct
            .metadata
            .contains_key(&format!("{}.attention.key_length", hp.architecture));
        let tiled = stated || hp.head_dim * hp.n_head == hp.n_embd;
        if hp.head_dim == 0 || !hp.head_dim.is_multiple_of(2) || !tiled {
            return Err(EmbeddedError::Format(format!(
                "bad head size {} for {} heads of {}",
                hp.head_dim, hp.n_head, hp.n_embd
            )));
        }
        let dev = Device::Cpu;
        let mut requantized = 0usize;
        let mut tensor = |name: &str| -> Result<QTensor, EmbeddedError> {
            if !ct.tensor_infos.contains_key(name) {
                return Err(EmbeddedError::Format(format!("the GGUF has no `{name}`")));
            }
            Ok(ct.tensor(reader, name, &dev)?)
        };
        // `parts` rows each of a (possibly fused) tensor, in order: a product's matrices.
        let mut split = |t: &QTensor,
                         name: &str,
                         parts: &[usize],
                         cols: usize|
         -> Result<Vec<Matrix>, EmbeddedError> {
            let (rows, c) = t.shape().dims2()?;
            if rows != parts.iter().sum::<usize>() || c != cols {
                return Err(EmbeddedError::Format(format!(
                    "`{name}` is {rows}×{c}, expected {}×{cols}",
                    parts.iter().sum::<usize>()
                )));
            }
            let mut start = 0;
            let mut out = Vec::with_capacity(parts.len());
            for &n in parts {
                let (m, converted) = Matrix::from_rows(t, start..start + n, target)?;
                requantized += usize::from(converted);
                out.push(m);
                start += n;
            }
            Ok(out)
        };
        let e = hp.n_embd;
        let (qd, kvd) = (hp.n_head * hp.head_dim, hp.n_kv_head * hp.head_dim);
        let vocab_size = ct
            .tensor_infos
            .get("token_embd.weight")
            .and_then(|i| i.shape.dims2().ok())
            .map(|(rows, _)| rows)
            .ok_or_else(|| EmbeddedError::Format("the GGUF has no `token_embd.weight`".into()))?;
        let one = |mut v: Vec<Matrix>| v.pop().ok_or_else(|| EmbeddedError::Format("empty".into()));
        let t = tensor("token_embd.weight")?;
        let embeddings = one(split(&t, "token_embd.weight", &[vocab_size], e)?)?;
        let output = match ct.tensor_infos.contains_key("output.weight") {
            true => {
                let t = tensor("output.weight")?;
                Some(one(split(&t, "output.weight", &[vocab_size], e)?)?)
            }
            false => None,
        };
        // Phi-3 fuses q|k|v into `attn_qkv` and gate|up into `ffn_up` (gate first); another
        // architecture without its gate is a malformed file, not a fused one.
        let fused_ffn =
            hp.architecture == "phi3" && !ct.tensor_infos.contains_key("blk.0.ffn_gate.weight");
        let n_ff = ct
            .tensor_infos
            .get("blk.0.ffn_up.weight")
            .and_then(|i| i.shape.dims2().ok())
            .map_or(0, |(rows, _)| if fused_ffn { rows / 2 } else { rows });
        let phi3_factors = match hp.rope_long_factors {
            true => "rope_factors_long.weight",
            false => "rope_factors_short.weight",
        };
        let mut layers = Vec::with_capacity(hp.n_layer);
        for i in 0..hp.n_layer {
            let p = format!("blk.{i}");
            let fused_qkv = format!("{p}.attn_qkv.weight");
            let (wq, wk, wv) = match ct.tensor_infos.contains_key(&fused_qkv) {
                true => {
                    let t = tensor(&fused_qkv)?;
                    let mut m = split(&t, &fused_qkv, &[qd, kvd, kvd], e)?.into_iter();
                    match (m.next(), m.next(), m.next()) {
                        (Some(q), Some(k), Some(v)) => (q, k, v),
                        _ => return Err(EmbeddedError::Format(format!("`{fused_qkv}` split"))),
                    }
                }
                false => {
                    let mut get = |n: &str, rows: usize| {
                        let name = format!("{p}.{n}.weight");
                        one(split(&tensor(&name)?, &name, &[rows], e)?)
                    };
                    (get("attn_q", qd)?, get("attn_k", kvd)?, get("attn_v", kvd)?)
                }
            };
            let name = format!("{p}.attn_output.weight");
            let wo = one(split(&tensor(&name)?, &name, &[e], qd)?)?;
            let up_name = format!("{p}.ffn_up.weight");
            let up = tensor(&up_name)?;
            let (w_gate, w_up) = match fused_ffn {
                true => {
                    let mut m = split(&up, &up_name, &[n_ff, n_ff], e)?.into_iter();
                    match (m.next(), m.next()) {
                        (Some(g), Some(u)) => (g, u),
                        _ => return Err(EmbeddedError::Format(format!("`{up_name}` split"))),
                    }
                }
                false => {
                    let name = format!("{p}.ffn_gate.weight");
                    let gate = one(split(&tensor(&name)?, &name, &[n_ff], e)?)?;
                    (gate, one(split(&up, &up_name, &[n_ff], e)?)?)
                }
            };
            let name = format!("{p}.ffn_down.weight");
            let w_down = one(split(&tensor(&name)?, &name, &[e], n_ff)?)?;
            let local = hp.is_local(i);
            layers.push(Layer {
                wq,
                wk,
                wv,
                wo,
                w_gate,
                w_down,
                w_up,
                qkv_bias: Vec::new(),
                q_norm: Vec::new(),
                k_norm: Vec::new(),
                attn_norm: Vec::new(),
                post_attn_norm: Vec::new(),
                post_ffn_norm: Vec::new(),
                ffn_norm: Vec::new(),
                rope: usize::from(local && hp.local_rope_differs()),
                local,
            });
        }
        let mut vector_of = |name: &str, e: usize| -> Result<Vec<f32>, EmbeddedError> {
            if !ct.tensor_infos.contains_key(name) {
                return Err(EmbeddedError::Format(format!("the GGUF has no `{name}`")));
            }
            let v = dequantize_all(&ct.tensor(reader, name, &dev)?)?;
            match v.len() == e {
                true => Ok(v),
                false => Err(EmbeddedError::Format(format!(
                    "`{name}` has {} values, expected {e}",
                    v.len()
                ))),
            }
        };
        for (i, layer) in layers.iter_mut().enumerate() {
            layer.attn_norm = vector_of(&format!("blk.{i}.attn_norm.weight"), e)?;
            layer.ffn_norm = vector_of(&format!("blk.{i}.ffn_norm.weight"), e)?;
            if hp.qkv_bias {
                let mut bias = vector_of(&format!("blk.{i}.attn_q.bias"), qd)?;
                bias.extend(vector_of(&format!("blk.{i}.attn_k.bias"), kvd)?);
                bias.extend(vector_of(&format!("blk.{i}.attn_v.bias"), kvd)?);
                layer.qkv_bias = bias;
            }
            if hp.qk_norm {
                layer.q_norm = vector_of(&format!("blk.{i}.attn_q_norm.weight"), hp.head_dim)?;
                layer.k_norm = vector_of(&format!("blk.{i}.attn_k_norm.weight"), hp.head_dim)?;
            }
            if hp.post_norms {
                layer.post_attn_norm =
                    vector_of(&format!("blk.{i}.post_attention_norm.weight"), e)?;
                layer.post_ffn_norm = vector_of(&format!("blk.{i}.post_ffw_norm.weight"), e)?;
            }
        }
        let out_norm = vector_of("output_norm.weight", e)?;
        // Per-frequency rotary factors: Phi-3's long or short ones, or Llama 3.1's `rope_freqs`
        // (its frequency scaling, worked out by the converter), as llama.cpp divides by them.
        let factors = match [phi3_factors, ROPE_FREQS]
            .into_iter()
            .find(|name| ct.tensor_infos.contains_key(*name))
        {
            Some(name) => Some(vector_of(name, hp.rope_dim / 2)?),
            None => None,
        };
        let mut thetas = vec![hp.theta(false, factors.as_deref())];
        if hp.local_rope_differs() {
            thetas.push(hp.theta(true, factors.as_deref()));
        }
        Ok(Weights {
            hparams: hp,
            embeddings,
            layers,
            out_norm,
            output,
            thetas,
            vocab_size,
            requantized,
            threads: default_threads(),
        })
    }

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
