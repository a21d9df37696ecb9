//! The previous forward pass, a graph of candle tensor operations (candle-transformers'
//! `quantized_llama` with a truncatable cache), kept as the reference the tests compare against;
//! `qwen2` as candle-transformers' `quantized_qwen2` computes it (biases added to the q/k/v
//! products, candle's `rope` on the halves of a head instead of `rope_i`); `qwen3` as its
//! `quantized_qwen3` does (an RMS norm on every query and key head before `rope`, heads of
//! `attention.key_length`); `phi3` as its `quantized_phi3` does (q|k|v and gate|up cut from the
//! fused products), with the long-context rotary factors, their magnitude and Phi-4-mini's partial
//! rotation; the Gemmas as candle-transformers' `gemma`, `gemma2` and `gemma3` compute them (embeddings
//! times √n_embd, GELU, norms after each block, soft-capped scores and logits, sliding windows as
//! an additive mask, the local layers' own rotary base). Rotary tables and which layers slide are
//! computed here from the file's values, not through the pass's own helpers.

#![allow(dead_code)]

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor, D};

use super::matrix::needs_requantize;
use super::{Activation, Hparams, Rotation};
use crate::error::EmbeddedError;

/// candle-nn's rotation of the first `rope_dim` dimensions of every head (all of them but for
/// Phi-4-mini's partial rotation), the rest passed through.
fn rotate(x: &Tensor, cos: &Tensor, sin: &Tensor, hp: &Hparams) -> Result<Tensor, EmbeddedError> {
    let rot = hp.rope_dim;
    let turned = x.narrow(D::Minus1, 0, rot)?.contiguous()?;
    let turned = match hp.rotation {
        Rotation::Interleaved => candle_nn::rotary_emb::rope_i(&turned, cos, sin)?,
        Rotation::Halves => candle_nn::rotary_emb::rope(&turned, cos, sin)?,
    };
    match rot == hp.head_dim {
        true => Ok(turned),
        false => {
            let rest = x.narrow(D::Minus1, rot, hp.head_dim - rot)?;
            Ok(Tensor::cat(&[&turned, &rest], D::Minus1)?)
        }
    }
}

/// The q, k and v products: three matrices, or Phi-3's one fused `attn_qkv` whose output is cut
/// in three (as candle-transformers' `quantized_phi3` does).
enum Qkv {
    Split(QMatMul, QMatMul, QMatMul),
    Fused(QMatMul),
}

/// The gate and up products: two matrices, or Phi-3's fused gate|up `ffn_up`.
enum GateUp {
    Split(QMatMul, QMatMul),
    Fused(QMatMul),
}

struct Layer {
    qkv: Qkv,
    wo: QMatMul,
    /// q, k and v biases (Qwen2).
    bias: Option<(Tensor, Tensor, Tensor)>,
    /// Per-head q and k norm weights (Qwen3).
    qk_norm: Option<(Tensor, Tensor)>,
    attn_norm: Tensor,
    /// Gemma 2/3's norms of the attention and feed-forward outputs.
    post_norms: Option<(Tensor, Tensor)>,
    gate_up: GateUp,
    w_down: QMatMul,
    ffn_norm: Tensor,
    /// Which rotary tables, and whether the layer attends through the sliding window.
    rope: usize,
    local: bool,
}

/// The weights (shared, read-only).
pub struct RefWeights {
    pub hparams: Hparams,
    embeddings: Tensor,
    layers: Vec<Layer>,
    out_norm: Tensor,
    output: QMatMul,
    /// Per rotary table.
    cos: Vec<Tensor>,
    sin: Vec<Tensor>,
    pub vocab_size: usize,
    /// How many tensors were re-quantized at load.
    pub requantized: usize,
}

/// The per-conversation state: the KV cache and the tokens it holds.
#[derive(Default)]
pub struct RefCache {
    layers: Vec<Option<(Tensor, Tensor)>>,
    tokens: Vec<u32>,
}

impl RefCache {
    /// The tokens whose keys and values are cached.
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// Keeps only the first `n` positions.
    pub fn truncate(&mut self, n: usize) -> Result<(), EmbeddedError> {
        if n >= self.tokens.len() {
            return Ok(());
        }
        self.tokens.truncate(n);
        for slot in self.layers.iter_mut() {
            *slot = match slot.take() {
                Some(_) if n == 0 => None,
                Some((k, v)) => Some((k.narrow(2, 0, n)?, v.narrow(2, 0, n)?)),
                None => None,
            };
        }
        Ok(())
    }

    pub fn clear(&mut self) {
        self.layers.clear();
        self.tokens.clear();
    }
}

impl RefWeights {
    /// Loads the weights, re-quantizing the types that have no fast kernel to Q8_0.
    pub fn load<R: Read + Seek>(ct: &Content, reader: &mut R) -> Result<RefWeights, EmbeddedError> {
        RefWeights::load_as(ct, reader, GgmlDType::Q8_0, false)
    }

    /// The stored weights as dense f32 matrices: products without quantizing the activations,
    /// exact maths on the file's weights.
    pub fn load_dense<R: Read + Seek>(
        ct: &Content,
        reader: &mut R,
    ) -> Result<RefWeights, EmbeddedError> {
        RefWeights::load_as(ct, reader, GgmlDType::Q8_0, true)
    }

    /// Loads the weights, converting the types without a fast kernel to `target` (Q8_0: lossless
    /// for Q4_x/Q5_x; Q4_0: smaller and faster, but a second rounding).
    pub fn load_as<R: Read + Seek>(
        ct: &Content,
        reader: &mut R,
        target: GgmlDType,
        dense: bool,
    ) -> Result<RefWeights, EmbeddedError> {
        let mat = |q: QTensor| -> Result<QMatMul, EmbeddedError> {
            match dense {
                true => Ok(QMatMul::Tensor(q.dequantize(&Device::Cpu)?)),
                false => Ok(QMatMul::from_qtensor(q)?),
            }
        };
        let hp = Hparams::from_gguf(ct)?;
        if hp.n_head == 0 || hp.n_kv_head == 0 || hp.n_head % hp.n_kv_head != 0 {
            return Err(EmbeddedError::Format(format!(
                "bad head counts {} / {}",
                hp.n_head, hp.n_kv_head
            )));
        }
        let dev = Device::Cpu;
        let mut requantized = 0usize;
        let mut get = |name: &str| -> Result<QTensor, EmbeddedError> {
            let t = ct.tensor(reader, name, &dev)?;
            if !dense
                && needs_requantize(t.dtype())
                && t.dtype() != target
                && t.shape().dims().last().is_some_and(|d| d % 32 == 0)
            {
                requantized += 1;
                let f = t.dequantize(&dev)?;
                Ok(QTensor::quantize(&f, target)?)
            } else {
                Ok(t)
            }
        };
        let norm = |q: QTensor| -> Result<Tensor, EmbeddedError> { Ok(q.dequantize(&dev)?) };
        let embd_q = get("token_embd.weight")?;
        let embeddings = embd_q.dequantize(&dev)?;
        let vocab_size = embeddings.dim(0)?;
        let out_norm = norm(get("output_norm.weight")?)?;
        let output = match ct.tensor_infos.contains_key("output.weight") {
            true => get("output.weight")?,
            false => embd_q,
        };
        let mut layers = Vec::with_capacity(hp.n_layer);
        for i in 0..hp.n_layer {
            let p = format!("blk.{i}");
            let qkv = match ct
                .tensor_infos
                .contains_key(&format!("{p}.attn_qkv.weight"))
            {
                true => Qkv::Fused(mat(get(&format!("{p}.attn_qkv.weight"))?)?),
                false => Qkv::Split(
                    mat(get(&format!("{p}.attn_q.weight"))?)?,
                    mat(get(&format!("{p}.attn_k.weight"))?)?,
                    mat(get(&format!("{p}.attn_v.weight"))?)?,
                ),
            };
            let gate_up = match ct
                .tensor_infos
                .contains_key(&format!("{p}.ffn_gate.weight"))
            {
                true => GateUp::Split(
                    mat(get(&format!("{p}.ffn_gate.weight"))?)?,
                    mat(get(&format!("{p}.ffn_up.weight"))?)?,
                ),
                false => GateUp::Fused(mat(get(&format!("{p}.ffn_up.weight"))?)?),
            };
            // Which layers slide, from the models' own configurations (Gemma 2: the even ones;
            // Gemma 3: five of every six), not from `Hparams::is_local`.
            let local = hp.sliding_window > 0
                && match hp.architecture.as_str() {
                    "gemma2" => i % 2 == 0,
                    "gemma3" => i % 6 != 5,
                    _ => false,
                };
            layers.push(Layer {
                qkv,
                gate_up,
                rope: usize::from(local && hp.rope_base_local.is_some()),
                local,
                post_norms: match hp.post_norms {
                    true => Some((
                        norm(get(&format!("{p}.post_attention_norm.weight"))?)?,
                        norm(get(&format!("{p}.post_ffw_norm.weight"))?)?,
                    )),
                    false => None,
                },
                wo: mat(get(&format!("{p}.attn_output.weight"))?)?,
                bias: match hp.qkv_bias {
                    true => Some((
                        norm(get(&format!("{p}.attn_q.bias"))?)?,
                        norm(get(&format!("{p}.attn_k.bias"))?)?,
                        norm(get(&format!("{p}.attn_v.bias"))?)?,
                    )),
                    false => None,
                },
                qk_norm: match hp.qk_norm {
                    true => Some((
                        norm(get(&format!("{p}.attn_q_norm.weight"))?)?,
                        norm(get(&format!("{p}.attn_k_norm.weight"))?)?,
                    )),
                    false => None,
                },
                attn_norm: norm(get(&format!("{p}.attn_norm.weight"))?)?,
                w_down: mat(get(&format!("{p}.ffn_down.weight"))?)?,
                ffn_norm: norm(get(&format!("{p}.ffn_norm.weight"))?)?,
            });
        }
        let output = mat(output)?;
        // Rotary tables, one per kind of layer, computed here from the file's values rather than
        // through `Hparams::theta`: `base^(-2i/rope_dim)` over the rotated dimensions, global
        // layers divided by the linear scale, local layers (Gemma 3) with their own base and no
        // scale, and Phi-3's or Llama 3.1's (`rope_freqs`) per-frequency factors.
        let half = hp.rope_dim / 2;
        let factors_name = match hp.rope_long_factors {
            true => "rope_factors_long.weight",
            false => "rope_factors_short.weight",
        };
        let factors_name = match ct.tensor_infos.contains_key(factors_name) {
            true => factors_name,
            false => "rope_freqs.weight",
        };
        let factors = match ct.tensor_infos.contains_key(factors_name) {
            true => get(factors_name)?.dequantize(&dev)?.to_vec1::<f32>()?,
            false => vec![1.0; half],
        };
        let inv_freq = |base: f32, scale: f32| -> Vec<f32> {
            (0..half)
                .map(|i| {
                    let exponent = (2 * i) as f32 / hp.rope_dim as f32;
                    1.0 / (base.powf(exponent) * scale * factors[i])
                })
                .collect()
        };
        let mut thetas = vec![inv_freq(hp.rope_base, hp.rope_linear_scale)];
        if let (Some(local_base), true) = (hp.rope_base_local, hp.sliding_window > 0) {
            thetas.push(inv_freq(local_base, 1.0));
        }
        let positions = Tensor::arange(0u32, hp.context_length as u32, &dev)?
            .to_dtype(DType::F32)?
            .reshape((hp.context_length, 1))?;
        let (mut cos, mut sin) = (Vec::new(), Vec::new());
        for theta in &thetas {
            let theta = Tensor::new(theta.as_slice(), &dev)?.reshape((1, half))?;
            let angles = positions.matmul(&theta)?;
            let mag = f64::from(hp.rope_attn_factor);
            cos.push((angles.cos()? * mag)?);
            sin.push((angles.sin()? * mag)?);
        }
        Ok(RefWeights {
            cos,
            sin,
            hparams: hp,
            embeddings,
            layers,
            out_norm,
            output,
            vocab_size,
            requantized,
        })
    }

    /// Feeds `tokens` after what the cache holds and returns the logits of the last position.
    pub fn forward(&self, tokens: &[u32], cache: &mut RefCache) -> Result<Vec<f32>, EmbeddedError> {
        let hp = &self.hparams;
        let seq = tokens.len();
        let pos = cache.tokens.len();
        if seq == 0 {
            return Err(EmbeddedError::Generation("nothing to feed".into()));
        }
        if pos + seq > hp.context_length {
            return Err(EmbeddedError::ContextFull {
                needed: pos + seq,
                context: hp.context_length,
            });
        }
        if cache.layers.len() != self.layers.len() {
            cache.layers = (0..self.layers.len()).map(|_| None).collect();
        }
        let dev = Device::Cpu;
        let ids = Tensor::new(tokens, &dev)?;
        let mut x = self.embeddings.index_select(&ids, 0)?.unsqueeze(0)?;
        if hp.embed_scale != 1.0 {
            x = (x * f64::from(hp.embed_scale))?;
        }
        // Causal masks: everything before, or in local layers the window's last positions.
        let kv = pos + seq;
        let mask_of = |window: Option<usize>| -> Result<Option<Tensor>, EmbeddedError> {
            let hidden = |i: usize, j: usize| {
                j > pos + i || window.is_some_and(|w| pos + i - j.min(pos + i) >= w)
            };
            if seq == 1 && (0..kv).all(|j| !hidden(0, j)) {
                return Ok(None);
            }
            let m: Vec<f32> = (0..seq)
                .flat_map(|i| {
                    (0..kv).map(move |j| if hidden(i, j) { f32::NEG_INFINITY } else { 0.0 })
                })
                .collect();
            Ok(Some(Tensor::from_vec(m, (seq, kv), &dev)?))
        };
        let global_mask = mask_of(None)?;
        let local_mask = match hp.sliding_window {
            0 => None,
            w => mask_of(Some(w))?,
        };
        let n_rep = hp.n_head / hp.n_kv_head;
        let scale = f64::from(hp.attn_scale);
        let (qd, kvd) = (hp.n_head * hp.head_dim, hp.n_kv_head * hp.head_dim);
        for (layer, slot) in self.layers.iter().zip(cache.layers.iter_mut()) {
            let cos = self.cos[layer.rope].narrow(0, pos, seq)?;
            let sin = self.sin[layer.rope].narrow(0, pos, seq)?;
            let mask = match layer.local {
                true => &local_mask,
                false => &global_mask,
            };
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, hp.rms_eps as f32)?;
            let (q, k, v) = match &layer.qkv {
                Qkv::Split(wq, wk, wv) => (wq.forward(&h)?, wk.forward(&h)?, wv.forward(&h)?),
                Qkv::Fused(w) => {
                    let qkv = w.forward(&h)?;
                    (
                        qkv.narrow(D::Minus1, 0, qd)?,
                        qkv.narrow(D::Minus1, qd, kvd)?,
                        qkv.narrow(D::Minus1, qd + kvd, kvd)?,
                    )
                }
            };
            let (q, k, v) = match &layer.bias {
                Some((bq, bk, bv)) => (
                    q.broadcast_add(bq)?,
                    k.broadcast_add(bk)?,
                    v.broadcast_add(bv)?,
                ),
                None => (q, k, v),
            };
            let q = q
                .reshape((1, seq, hp.n_head, hp.head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let k = k
                .reshape((1, seq, hp.n_kv_head, hp.head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let v = v
                .reshape((1, seq, hp.n_kv_head, hp.head_dim))?
                .transpose(1, 2)?
                .contiguous()?;
            let (q, k) = match &layer.qk_norm {
                Some((qn, kn)) => (
                    candle_nn::ops::rms_norm(&q, qn, hp.rms_eps as f32)?,
                    candle_nn::ops::rms_norm(&k, kn, hp.rms_eps as f32)?,
                ),
                None => (q, k),
            };
            let (q, k) = (rotate(&q, &cos, &sin, hp)?, rotate(&k, &cos, &sin, hp)?);
            let (k, v) = match slot.take() {
                Some((kc, vc)) => (Tensor::cat(&[&kc, &k], 2)?, Tensor::cat(&[&vc, &v], 2)?),
                None => (k, v),
            };
            *slot = Some((k.clone(), v.clone()));
            let (k, v) = if n_rep > 1 {
                let kv_len = k.dim(2)?;
                let shape = (1, hp.n_head, kv_len, hp.head_dim);
                (
                    Tensor::cat(&vec![&k; n_rep], 2)?.reshape(shape)?,
                    Tensor::cat(&vec![&v; n_rep], 2)?.reshape(shape)?,
                )
            } else {
                (k, v)
            };
            let att = (q.matmul(&k.t()?)? * scale)?;
            let att = match hp.attn_softcap {
                Some(cap) => ((att / f64::from(cap))?.tanh()? * f64::from(cap))?,
                None => att,
            };
            let att = match mask {
                Some(m) => att.broadcast_add(m)?,
                None => att,
            };
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att.matmul(&v.contiguous()?)?.transpose(1, 2)?.reshape((
                1,
                seq,
                hp.n_head * hp.head_dim,
            ))?;
            let eps = hp.rms_eps as f32;
            let y = layer.wo.forward(&y)?;
            let y = match &layer.post_norms {
                Some((attn, _)) => candle_nn::ops::rms_norm(&y, attn, eps)?,
                None => y,
            };
            x = (y + x)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, eps)?;
            let (gate, up) = match &layer.gate_up {
                GateUp::Split(g, u) => (g.forward(&h)?, u.forward(&h)?),
                GateUp::Fused(w) => {
                    let both = w.forward(&h)?;
                    let n_ff = both.dim(D::Minus1)? / 2;
                    (
                        both.narrow(D::Minus1, 0, n_ff)?,
                        both.narrow(D::Minus1, n_ff, n_ff)?,
                    )
                }
            };
            let gate = match hp.activation {
                Activation::Silu => candle_nn::ops::silu(&gate)?,
                Activation::GeluTanh => gate.gelu()?,
            };
            let y = layer.w_down.forward(&(gate * up)?)?;
            let y = match &layer.post_norms {
                Some((_, ffn)) => candle_nn::ops::rms_norm(&y, ffn, eps)?,
                None => y,
            };
            x = (y + x)?;
        }
        cache.tokens.extend_from_slice(tokens);
        let last = x.narrow(1, seq - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.out_norm, hp.rms_eps as f32)?;
        let logits = self.output.forward(&last)?.squeeze(0)?.squeeze(0)?;
        let logits = match hp.final_softcap {
            Some(cap) => ((logits / f64::from(cap))?.tanh()? * f64::from(cap))?,
            None => logits,
        };
        Ok(logits.to_dtype(DType::F32)?.to_vec1::<f32>()?)
    }
}
