//! The previous forward pass, a graph of candle tensor operations (candle-transformers'
//! `quantized_llama` with a truncatable cache), kept as the reference the tests compare against;
//! `qwen2` as candle-transformers' `quantized_qwen2` computes it (biases added to the q/k/v
//! products, candle's `rope` on the halves of a head instead of `rope_i`); `qwen3` as its
//! `quantized_qwen3` does (an RMS norm on every query and key head before `rope`, heads of
//! `attention.key_length`).

#![allow(dead_code)]

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
use candle_core::{DType, Device, Module, Tensor};

use super::matrix::needs_requantize;
use super::{Hparams, Rotation};
use crate::error::EmbeddedError;

struct Layer {
    wq: QMatMul,
    wk: QMatMul,
    wv: QMatMul,
    wo: QMatMul,
    /// q, k and v biases (Qwen2).
    bias: Option<(Tensor, Tensor, Tensor)>,
    /// Per-head q and k norm weights (Qwen3).
    qk_norm: Option<(Tensor, Tensor)>,
    attn_norm: Tensor,
    w_gate: QMatMul,
    w_down: QMatMul,
    w_up: QMatMul,
    ffn_norm: Tensor,
}

/// The weights (shared, read-only).
pub struct RefWeights {
    pub hparams: Hparams,
    embeddings: Tensor,
    layers: Vec<Layer>,
    out_norm: Tensor,
    output: QMatMul,
    cos: Tensor,
    sin: Tensor,
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
            layers.push(Layer {
                wq: mat(get(&format!("{p}.attn_q.weight"))?)?,
                wk: mat(get(&format!("{p}.attn_k.weight"))?)?,
                wv: mat(get(&format!("{p}.attn_v.weight"))?)?,
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
                w_gate: mat(get(&format!("{p}.ffn_gate.weight"))?)?,
                w_down: mat(get(&format!("{p}.ffn_down.weight"))?)?,
                w_up: mat(get(&format!("{p}.ffn_up.weight"))?)?,
                ffn_norm: norm(get(&format!("{p}.ffn_norm.weight"))?)?,
            });
        }
        let output = mat(output)?;
        // Rotary tables (llama's interleaved "NORM" rotation, as GGUF stores llama's Q/K).
        let half = hp.head_dim / 2;
        let theta: Vec<f32> = (0..half)
            .map(|i| 1.0 / hp.rope_base.powf((2 * i) as f32 / hp.head_dim as f32))
            .collect();
        let theta = Tensor::new(theta.as_slice(), &dev)?.reshape((1, half))?;
        let positions = Tensor::arange(0u32, hp.context_length as u32, &dev)?
            .to_dtype(DType::F32)?
            .reshape((hp.context_length, 1))?;
        let angles = positions.matmul(&theta)?;
        Ok(RefWeights {
            cos: angles.cos()?,
            sin: angles.sin()?,
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
        let mask = if seq > 1 {
            let kv = pos + seq;
            let m: Vec<f32> = (0..seq)
                .flat_map(|i| {
                    (0..kv).map(move |j| if j > pos + i { f32::NEG_INFINITY } else { 0.0 })
                })
                .collect();
            Some(Tensor::from_vec(m, (seq, kv), &dev)?)
        } else {
            None
        };
        let cos = self.cos.narrow(0, pos, seq)?;
        let sin = self.sin.narrow(0, pos, seq)?;
        let n_rep = hp.n_head / hp.n_kv_head;
        let scale = 1.0 / (hp.head_dim as f64).sqrt();
        for (layer, slot) in self.layers.iter().zip(cache.layers.iter_mut()) {
            let h = candle_nn::ops::rms_norm(&x, &layer.attn_norm, hp.rms_eps as f32)?;
            let (q, k, v) = (
                layer.wq.forward(&h)?,
                layer.wk.forward(&h)?,
                layer.wv.forward(&h)?,
            );
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
            let (q, k) = match hp.rotation {
                Rotation::Interleaved => (
                    candle_nn::rotary_emb::rope_i(&q, &cos, &sin)?,
                    candle_nn::rotary_emb::rope_i(&k, &cos, &sin)?,
                ),
                Rotation::Halves => (
                    candle_nn::rotary_emb::rope(&q, &cos, &sin)?,
                    candle_nn::rotary_emb::rope(&k, &cos, &sin)?,
                ),
            };
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
            let att = match &mask {
                Some(m) => att.broadcast_add(m)?,
                None => att,
            };
            let att = candle_nn::ops::softmax_last_dim(&att)?;
            let y = att.matmul(&v.contiguous()?)?.transpose(1, 2)?.reshape((
                1,
                seq,
                hp.n_head * hp.head_dim,
            ))?;
            x = (layer.wo.forward(&y)? + x)?;
            let h = candle_nn::ops::rms_norm(&x, &layer.ffn_norm, hp.rms_eps as f32)?;
            let gate = candle_nn::ops::silu(&layer.w_gate.forward(&h)?)?;
            let up = layer.w_up.forward(&h)?;
            x = (layer.w_down.forward(&(gate * up)?)? + x)?;
        }
        cache.tokens.extend_from_slice(tokens);
        let last = x.narrow(1, seq - 1, 1)?;
        let last = candle_nn::ops::rms_norm(&last, &self.out_norm, hp.rms_eps as f32)?;
        let logits = self.output.forward(&last)?.squeeze(0)?.squeeze(0)?;
        Ok(logits.to_dtype(DType::F32)?.to_vec1::<f32>()?)
    }
}
