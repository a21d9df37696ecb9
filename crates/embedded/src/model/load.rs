//! Loading [`Weights`] from a GGUF file: the checks of the hyperparameters, each layer's
//! matrices (cut apart where Phi-3 stores them fused) and norm vectors, and the rotary tables.

use std::io::{Read, Seek};

use candle_core::quantized::gguf_file::Content;
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::Device;

use super::matrix::{dequantize_all, Matrix};
use super::{default_threads, Hparams, Layer, Weights, ROPE_FREQS};
use crate::error::EmbeddedError;

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
        check_heads(ct, &hp)?;
        let mut load = Loader {
            ct,
            reader,
            dev: Device::Cpu,
            target,
            requantized: 0,
        };
        let e = hp.n_embd;
        let shape = Shape::of(ct, &hp);
        let vocab_size = ct
            .tensor_infos
            .get("token_embd.weight")
            .and_then(|i| i.shape.dims2().ok())
            .map(|(rows, _)| rows)
            .ok_or_else(|| EmbeddedError::Format("the GGUF has no `token_embd.weight`".into()))?;
        let embeddings = load.matrix("token_embd.weight", vocab_size, e)?;
        let output = match ct.tensor_infos.contains_key("output.weight") {
            true => Some(load.matrix("output.weight", vocab_size, e)?),
            false => None,
        };
        let mut layers = Vec::with_capacity(hp.n_layer);
        for i in 0..hp.n_layer {
            layers.push(load.layer(&hp, &shape, i)?);
        }
        for (i, layer) in layers.iter_mut().enumerate() {
            load.norms(&hp, &shape, i, layer)?;
        }
        let out_norm = load.vector("output_norm.weight", e)?;
        let thetas = load.rotary_tables(&hp)?;
        Ok(Weights {
            hparams: hp,
            embeddings,
            layers,
            out_norm,
            output,
            thetas,
            vocab_size,
            requantized: load.requantized,
            threads: default_threads(),
        })
    }
}

/// Refuses head counts and sizes the forward pass cannot run.
fn check_heads(ct: &Content, hp: &Hparams) -> Result<(), EmbeddedError> {
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
    Ok(())
}

/// The sizes of a layer's products.
struct Shape {
    /// The width of the queries (all heads) and of the keys and values (the shared heads).
    qd: usize,
    kvd: usize,
    /// The feed-forward width.
    n_ff: usize,
    /// gate|up stored as one tensor (Phi-3).
    fused_ffn: bool,
}

impl Shape {
    fn of(ct: &Content, hp: &Hparams) -> Shape {
        // Phi-3 fuses q|k|v into `attn_qkv` and gate|up into `ffn_up` (gate first); another
        // architecture without its gate is a malformed file, not a fused one.
        let fused_ffn =
            hp.architecture == "phi3" && !ct.tensor_infos.contains_key("blk.0.ffn_gate.weight");
        let n_ff = ct
            .tensor_infos
            .get("blk.0.ffn_up.weight")
            .and_then(|i| i.shape.dims2().ok())
            .map_or(0, |(rows, _)| if fused_ffn { rows / 2 } else { rows });
        Shape {
            qd: hp.n_head * hp.head_dim,
            kvd: hp.n_kv_head * hp.head_dim,
            n_ff,
            fused_ffn,
        }
    }
}

/// Reads the file's tensors: matrices converted to `target`'s blocks (counting the re-quantized
/// ones), vectors dequantized.
struct Loader<'a, R> {
    ct: &'a Content,
    reader: &'a mut R,
    dev: Device,
    target: GgmlDType,
    requantized: usize,
}

impl<R: Read + Seek> Loader<'_, R> {
    fn tensor(&mut self, name: &str) -> Result<QTensor, EmbeddedError> {
        if !self.ct.tensor_infos.contains_key(name) {
            return Err(EmbeddedError::Format(format!("the GGUF has no `{name}`")));
        }
        Ok(self.ct.tensor(self.reader, name, &self.dev)?)
    }

    /// `parts` rows each of a (possibly fused) tensor, in order: a product's matrices.
    fn split(
        &mut self,
        t: &QTensor,
        name: &str,
        parts: &[usize],
        cols: usize,
    ) -> Result<Vec<Matrix>, EmbeddedError> {
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
            let (m, converted) = Matrix::from_rows(t, start..start + n, self.target)?;
            self.requantized += usize::from(converted);
            out.push(m);
            start += n;
        }
        Ok(out)
    }

    /// The matrix of tensor `name`, `rows`×`cols`.
    fn matrix(&mut self, name: &str, rows: usize, cols: usize) -> Result<Matrix, EmbeddedError> {
        let t = self.tensor(name)?;
        one(self.split(&t, name, &[rows], cols)?)
    }

    /// Layer `i`'s matrices (its norms come after every layer's matrices: [`Loader::norms`]).
    fn layer(&mut self, hp: &Hparams, shape: &Shape, i: usize) -> Result<Layer, EmbeddedError> {
        let (e, qd, kvd, n_ff) = (hp.n_embd, shape.qd, shape.kvd, shape.n_ff);
        let p = format!("blk.{i}");
        let fused_qkv = format!("{p}.attn_qkv.weight");
        let (wq, wk, wv) = match self.ct.tensor_infos.contains_key(&fused_qkv) {
            true => {
                let t = self.tensor(&fused_qkv)?;
                let mut m = self.split(&t, &fused_qkv, &[qd, kvd, kvd], e)?.into_iter();
                match (m.next(), m.next(), m.next()) {
                    (Some(q), Some(k), Some(v)) => (q, k, v),
                    _ => return Err(EmbeddedError::Format(format!("`{fused_qkv}` split"))),
                }
            }
            false => (
                self.matrix(&format!("{p}.attn_q.weight"), qd, e)?,
                self.matrix(&format!("{p}.attn_k.weight"), kvd, e)?,
                self.matrix(&format!("{p}.attn_v.weight"), kvd, e)?,
            ),
        };
        let wo = self.matrix(&format!("{p}.attn_output.weight"), e, qd)?;
        let up_name = format!("{p}.ffn_up.weight");
        let up = self.tensor(&up_name)?;
        let (w_gate, w_up) = match shape.fused_ffn {
            true => {
                let mut m = self.split(&up, &up_name, &[n_ff, n_ff], e)?.into_iter();
                match (m.next(), m.next()) {
                    (Some(g), Some(u)) => (g, u),
                    _ => return Err(EmbeddedError::Format(format!("`{up_name}` split"))),
                }
            }
            false => {
                let gate = self.matrix(&format!("{p}.ffn_gate.weight"), n_ff, e)?;
                (gate, one(self.split(&up, &up_name, &[n_ff], e)?)?)
            }
        };
        let w_down = self.matrix(&format!("{p}.ffn_down.weight"), e, n_ff)?;
        let local = hp.is_local(i);
        Ok(Layer {
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
        })
    }

    /// The vector of tensor `name`, dequantized, of `len` values.
    fn vector(&mut self, name: &str, len: usize) -> Result<Vec<f32>, EmbeddedError> {
        if !self.ct.tensor_infos.contains_key(name) {
            return Err(EmbeddedError::Format(format!("the GGUF has no `{name}`")));
        }
        let v = dequantize_all(&self.ct.tensor(self.reader, name, &self.dev)?)?;
        match v.len() == len {
            true => Ok(v),
            false => Err(EmbeddedError::Format(format!(
                "`{name}` has {} values, expected {len}",
                v.len()
            ))),
        }
    }

    /// Layer `i`'s norm weights and biases, those its architecture has.
    fn norms(
        &mut self,
        hp: &Hparams,
        shape: &Shape,
        i: usize,
        layer: &mut Layer,
    ) -> Result<(), EmbeddedError> {
        let (e, qd, kvd) = (hp.n_embd, shape.qd, shape.kvd);
        layer.attn_norm = self.vector(&format!("blk.{i}.attn_norm.weight"), e)?;
        layer.ffn_norm = self.vector(&format!("blk.{i}.ffn_norm.weight"), e)?;
        if hp.qkv_bias {
            let mut bias = self.vector(&format!("blk.{i}.attn_q.bias"), qd)?;
            bias.extend(self.vector(&format!("blk.{i}.attn_k.bias"), kvd)?);
            bias.extend(self.vector(&format!("blk.{i}.attn_v.bias"), kvd)?);
            layer.qkv_bias = bias;
        }
        if hp.qk_norm {
            layer.q_norm = self.vector(&format!("blk.{i}.attn_q_norm.weight"), hp.head_dim)?;
            layer.k_norm = self.vector(&format!("blk.{i}.attn_k_norm.weight"), hp.head_dim)?;
        }
        if hp.post_norms {
            layer.post_attn_norm =
                self.vector(&format!("blk.{i}.post_attention_norm.weight"), e)?;
            layer.post_ffn_norm = self.vector(&format!("blk.{i}.post_ffw_norm.weight"), e)?;
        }
        Ok(())
    }

    /// The rotary frequencies per table ([`Layer::rope`]): the global layers', and the local
    /// layers' where their base differs.
    fn rotary_tables(&mut self, hp: &Hparams) -> Result<Vec<Vec<f32>>, EmbeddedError> {
        let phi3_factors = match hp.rope_long_factors {
            true => "rope_factors_long.weight",
            false => "rope_factors_short.weight",
        };
        // Per-frequency rotary factors: Phi-3's long or short ones, or Llama 3.1's `rope_freqs`
        // (its frequency scaling, worked out by the converter), as llama.cpp divides by them.
        let factors = match [phi3_factors, ROPE_FREQS]
            .into_iter()
            .find(|name| self.ct.tensor_infos.contains_key(*name))
        {
            Some(name) => Some(self.vector(name, hp.rope_dim / 2)?),
            None => None,
        };
        let mut thetas = vec![hp.theta(false, factors.as_deref())];
        if hp.local_rope_differs() {
            thetas.push(hp.theta(true, factors.as_deref()));
        }
        Ok(thetas)
    }
}

/// The one matrix of a split.
fn one(mut v: Vec<Matrix>) -> Result<Matrix, EmbeddedError> {
    v.pop().ok_or_else(|| EmbeddedError::Format("empty".into()))
}
