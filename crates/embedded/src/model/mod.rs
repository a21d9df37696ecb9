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
//! Architectures: `llama` (Llama 1/2/3, SmolLM/SmolLM2, TinyLlama, Mistral without sliding window)
//! and `qwen2` (Qwen2/Qwen2.5: biases on the query, key and value products, and the rotation on
//! the two halves of a head rather than on interleaved pairs, as llama.cpp's "NEOX" rope), and
//! `qwen3` (Qwen3: no biases, but an RMS norm on every query and key head before the rotation,
//! and a head size of its own, `attention.key_length`, not `embedding_length / head_count`);
//! others are refused with a clear error naming the supported ones.

mod cache;
mod forward;
mod kernel;
mod matrix;
mod ops;
mod team;

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::GgmlDType;
use candle_core::Device;

pub use cache::KvCache;
use matrix::{dequantize_all, Matrix};

use crate::error::EmbeddedError;

/// The longest context supported (llama's context length, capped).
const MAX_CONTEXT: usize = 8192;

/// The architectures the forward pass implements, as `general.architecture` names them.
pub const SUPPORTED_ARCHITECTURES: &str =
    "llama (Llama, SmolLM, TinyLlama, Mistral), qwen2 (Qwen2, Qwen2.5), qwen3 (Qwen3)";

/// How a head's dimensions are paired for the rotary embedding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Pairs (0, 1), (2, 3), …: llama's GGUF layout (llama.cpp's "NORM").
    Interleaved,
    /// Pairs (i, i + head_dim/2): Qwen2 and most others (llama.cpp's "NEOX").
    Halves,
}

/// Model hyper-parameters read from the GGUF.
#[derive(Clone, Debug, PartialEq)]
pub struct Hparams {
    pub architecture: String,
    pub n_layer: usize,
    pub n_embd: usize,
    pub n_head: usize,
    pub n_kv_head: usize,
    pub head_dim: usize,
    pub rope_base: f32,
    pub rms_eps: f64,
    pub context_length: usize,
    pub rotation: Rotation,
    /// Biases on the query, key and value products (Qwen2).
    pub qkv_bias: bool,
    /// An RMS norm on each query and key head before the rotation (Qwen3).
    pub qk_norm: bool,
}

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
    w_gate: Matrix,
    w_down: Matrix,
    w_up: Matrix,
    ffn_norm: Vec<f32>,
}

/// The weights (shared, read-only).
pub struct Weights {
    pub hparams: Hparams,
    embeddings: Matrix,
    layers: Vec<Layer>,
    out_norm: Vec<f32>,
    /// `None`: tied to the embeddings.
    output: Option<Matrix>,
    /// Rotary frequencies, one per pair of a head.
    theta: Vec<f32>,
    pub vocab_size: usize,
    /// How many tensors of the 4/5-bit types were converted at load (into our block layout, or
    /// re-quantized).
    pub requantized: usize,
    threads: usize,
}

fn md_u32(ct: &Content, key: &str) -> Result<usize, EmbeddedError> {
    ct.metadata
        .get(key)
        .and_then(|v| v.to_u32().ok())
        .map(|v| v as usize)
        .ok_or_else(|| EmbeddedError::Format(format!("the GGUF has no `{key}`")))
}

impl Hparams {
    pub fn from_gguf(ct: &Content) -> Result<Hparams, EmbeddedError> {
        let architecture = ct
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        let (rotation, qkv_bias, qk_norm) = match architecture.as_str() {
            "llama" => (Rotation::Interleaved, false, false),
            "qwen2" => (Rotation::Halves, true, false),
            "qwen3" => (Rotation::Halves, false, true),
            _ => {
                return Err(EmbeddedError::Unsupported(format!(
                    "architecture `{architecture}` (supported: {SUPPORTED_ARCHITECTURES})"
                )))
            }
        };
        let a = &architecture;
        let n_head = md_u32(ct, &format!("{a}.attention.head_count"))?;
        let n_embd = md_u32(ct, &format!("{a}.embedding_length"))?;
        // Qwen3 states its head size (e.g. 128 for 16 heads of a 1024 stream); the others derive it.
        let head_dim =
            md_u32(ct, &format!("{a}.attention.key_length")).unwrap_or(n_embd / n_head.max(1));
        Ok(Hparams {
            n_layer: md_u32(ct, &format!("{a}.block_count"))?,
            n_embd,
            n_head,
            n_kv_head: md_u32(ct, &format!("{a}.attention.head_count_kv")).unwrap_or(n_head),
            head_dim,
            rope_base: ct
                .metadata
                .get(&format!("{a}.rope.freq_base"))
                .and_then(|v| v.to_f32().ok())
                .unwrap_or(10_000.0),
            rms_eps: ct
                .metadata
                .get(&format!("{a}.attention.layer_norm_rms_epsilon"))
                .and_then(|v| v.to_f32().ok())
                .unwrap_or(1e-5) as f64,
            context_length: md_u32(ct, &format!("{a}.context_length"))
                .unwrap_or(2048)
                .min(MAX_CONTEXT),
            rotation,
            qkv_bias,
            qk_norm,
            architecture,
        })
    }
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
        // Only Qwen3 may have heads that do not tile the stream (its output matrix maps them back).
        let tiled = hp.qk_norm || hp.head_dim * hp.n_head == hp.n_embd;
        if hp.head_dim == 0 || !hp.head_dim.is_multiple_of(2) || !tiled {
            return Err(EmbeddedError::Format(format!(
                "bad head size {} for {} heads of {}",
                hp.head_dim, hp.n_head, hp.n_embd
            )));
        }
        let dev = Device::Cpu;
        let mut requantized = 0usize;
        let mut matrix = |name: &str, rows: usize, cols: usize| -> Result<Matrix, EmbeddedError> {
            let t = ct.tensor(reader, name, &dev)?;
            let (m, converted) = Matrix::from_qtensor(&t, target)?;
            if (m.rows, m.cols) != (rows, cols) {
                return Err(EmbeddedError::Format(format!(
                    "`{name}` is {}×{}, expected {rows}×{cols}",
                    m.rows, m.cols
                )));
            }
            requantized += usize::from(converted);
            Ok(m)
        };
        let e = hp.n_embd;
        let (qd, kvd) = (hp.n_head * hp.head_dim, hp.n_kv_head * hp.head_dim);
        let vocab_size = ct
            .tensor_infos
            .get("token_embd.weight")
            .and_then(|i| i.shape.dims2().ok())
            .map(|(rows, _)| rows)
            .ok_or_else(|| EmbeddedError::Format("the GGUF has no `token_embd.weight`".into()))?;
        let n_ff = ct
            .tensor_infos
            .get("blk.0.ffn_up.weight")
            .and_then(|i| i.shape.dims2().ok())
            .map_or(0, |(rows, _)| rows);
        let embeddings = matrix("token_embd.weight", vocab_size, e)?;
        let output = match ct.tensor_infos.contains_key("output.weight") {
            true => Some(matrix("output.weight", vocab_size, e)?),
            false => None,
        };
        let mut layers = Vec::with_capacity(hp.n_layer);
        for i in 0..hp.n_layer {
            let p = format!("blk.{i}");
            layers.push(Layer {
                wq: matrix(&format!("{p}.attn_q.weight"), qd, e)?,
                wk: matrix(&format!("{p}.attn_k.weight"), kvd, e)?,
                wv: matrix(&format!("{p}.attn_v.weight"), kvd, e)?,
                wo: matrix(&format!("{p}.attn_output.weight"), e, qd)?,
                w_gate: matrix(&format!("{p}.ffn_gate.weight"), n_ff, e)?,
                w_down: matrix(&format!("{p}.ffn_down.weight"), e, n_ff)?,
                w_up: matrix(&format!("{p}.ffn_up.weight"), n_ff, e)?,
                qkv_bias: Vec::new(),
                q_norm: Vec::new(),
                k_norm: Vec::new(),
                attn_norm: Vec::new(),
                ffn_norm: Vec::new(),
            });
        }
        let mut vector_of = |name: &str, e: usize| -> Result<Vec<f32>, EmbeddedError> {
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
        }
        let out_norm = vector_of("output_norm.weight", e)?;
        // llama's rotary frequencies, computed as candle-transformers does.
        let theta = (0..hp.head_dim / 2)
            .map(|i| 1.0 / hp.rope_base.powf((2 * i) as f32 / hp.head_dim as f32))
            .collect();
        Ok(Weights {
            hparams: hp,
            embeddings,
            layers,
            out_norm,
            output,
            theta,
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
