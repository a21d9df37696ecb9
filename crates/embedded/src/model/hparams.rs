//! What a GGUF says about its transformer: the shape, and the per-architecture choices the
//! forward pass makes (which rotation, which activation, which norms, soft-capping, sliding
//! windows, the rotary frequencies). The values follow llama.cpp's reading of the same keys, so a
//! file behaves here as it does there.

use candle_core::quantized::gguf_file::Content;

use crate::error::EmbeddedError;

/// The longest context supported (a model's context length, capped).
pub(super) const MAX_CONTEXT: usize = 8192;

/// The architectures the forward pass implements, as `general.architecture` names them.
pub const SUPPORTED_ARCHITECTURES: &str = "llama (Llama, SmolLM, TinyLlama, Mistral), \
     qwen2 (Qwen2, Qwen2.5), qwen3 (Qwen3), phi3 (Phi-3, Phi-3.5, Phi-4-mini), \
     gemma (Gemma), gemma2 (Gemma 2), gemma3 (Gemma 3 text)";

/// How a head's dimensions are paired for the rotary embedding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rotation {
    /// Pairs (0, 1), (2, 3), …: llama's GGUF layout (llama.cpp's "NORM").
    Interleaved,
    /// Pairs (i, i + head_dim/2): Qwen2 and most others (llama.cpp's "NEOX").
    Halves,
}

/// The gate's activation in the feed-forward block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Activation {
    /// SiLU(gate) · up: llama, Qwen, Phi-3.
    Silu,
    /// GELU(gate) · up with GELU's tanh approximation: the Gemmas.
    GeluTanh,
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
    /// How many leading dimensions of a head the rotary embedding turns (`rope.dimension_count`:
    /// Phi-4-mini turns 96 of 128; the rest pass through), the head size when unstated.
    pub rope_dim: usize,
    pub rope_base: f32,
    pub rms_eps: f64,
    pub context_length: usize,
    pub rotation: Rotation,
    /// Biases on the query, key and value products (Qwen2).
    pub qkv_bias: bool,
    /// An RMS norm on each query and key head before the rotation (Qwen3, Gemma 3).
    pub qk_norm: bool,
    pub activation: Activation,
    /// The embeddings' multiplier (the Gemmas: √n_embd; others 1).
    pub embed_scale: f32,
    /// RMS norms on the attention and feed-forward outputs before they join the stream
    /// (`post_attention_norm`, `post_ffw_norm`: Gemma 2 and 3).
    pub post_norms: bool,
    /// The attention scores' multiplier (1/√head_dim but for the 27B Gemmas).
    pub attn_scale: f32,
    /// `cap · tanh(x / cap)` on the attention scores and on the logits (Gemma 2).
    pub attn_softcap: Option<f32>,
    pub final_softcap: Option<f32>,
    /// A sliding window of this many positions (0: none) on the layers [`Hparams::is_local`] names.
    pub sliding_window: usize,
    /// Every `swa_pattern`-th layer is global, the others local (llama.cpp's
    /// `set_swa_pattern`: Gemma 2 every 2nd, Gemma 3 every 6th).
    pub swa_pattern: usize,
    /// The rotary base of the local layers when it differs from the global one (Gemma 3: 10 000).
    pub rope_base_local: Option<f32>,
    /// Linear rotary scaling of the global layers: positions divided by this (Gemma 3 4B+).
    pub rope_linear_scale: f32,
    /// The rotation's magnitude factor (Phi-3's long-context "longrope": cos and sin times this).
    pub rope_attn_factor: f32,
    /// Which of Phi-3's per-frequency rotary factors apply: the long ones when the context used
    /// exceeds the original training context, as llama.cpp chooses.
    pub rope_long_factors: bool,
}

fn md_u32(ct: &Content, key: &str) -> Result<usize, EmbeddedError> {
    ct.metadata
        .get(key)
        .and_then(|v| v.to_u32().ok())
        .map(|v| v as usize)
        .ok_or_else(|| EmbeddedError::Format(format!("the GGUF has no `{key}`")))
}

fn md_f32(ct: &Content, key: &str) -> Option<f32> {
    ct.metadata.get(key).and_then(|v| v.to_f32().ok())
}

impl Hparams {
    pub fn from_gguf(ct: &Content) -> Result<Hparams, EmbeddedError> {
        let architecture = ct
            .metadata
            .get("general.architecture")
            .and_then(|v| v.to_string().ok())
            .cloned()
            .unwrap_or_default();
        let gemma = matches!(architecture.as_str(), "gemma" | "gemma2" | "gemma3");
        let (rotation, qkv_bias, qk_norm) = match architecture.as_str() {
            "llama" => (Rotation::Interleaved, false, false),
            "qwen2" => (Rotation::Halves, true, false),
            "qwen3" | "gemma3" => (Rotation::Halves, false, true),
            "phi3" | "gemma" | "gemma2" => (Rotation::Halves, false, false),
            _ => {
                return Err(EmbeddedError::Unsupported(format!(
                    "architecture `{architecture}` (supported: {SUPPORTED_ARCHITECTURES})"
                )))
            }
        };
        let a = &architecture;
        let key = |k: &str| format!("{a}.{k}");
        let n_layer = md_u32(ct, &key("block_count"))?;
        let n_head = md_u32(ct, &key("attention.head_count"))?;
        let n_embd = md_u32(ct, &key("embedding_length"))?;
        // Qwen3 and the Gemmas state their head size; the others derive it.
        let head_dim = md_u32(ct, &key("attention.key_length")).unwrap_or(n_embd / n_head.max(1));
        let context_length = md_u32(ct, &key("context_length"))
            .unwrap_or(2048)
            .min(MAX_CONTEXT);
        // The 27B Gemmas scale queries by the stream's width per head, not the head size
        // (`query_pre_attn_scalar`); llama.cpp tells them apart by their layer count.
        let big_gemma = (a == "gemma2" && n_layer == 46) || (a == "gemma3" && n_layer == 62);
        let attn_scale = match big_gemma {
            true => 1.0 / ((n_embd / n_head.max(1)) as f32).sqrt(),
            false => 1.0 / (head_dim as f32).sqrt(),
        };
        let (sliding_window, swa_pattern) = match a.as_str() {
            "gemma2" => (
                md_u32(ct, &key("attention.sliding_window")).unwrap_or(4096),
                2,
            ),
            // A Gemma 3 without a window attends globally everywhere, as llama.cpp reads it.
            "gemma3" => (md_u32(ct, &key("attention.sliding_window")).unwrap_or(0), 6),
            // Phi-3 files state a window, but llama.cpp does not apply it (its conversion does
            // not say which layers use it); neither do we, so a file answers as it does there.
            _ => (0, 0),
        };
        // llama.cpp takes a scaling factor without a stated type as linear.
        let linear = ct
            .metadata
            .get(&key("rope.scaling.type"))
            .and_then(|v| v.to_string().ok())
            .is_none_or(|t| t == "linear");
        let rope_linear_scale = match linear {
            true => md_f32(ct, &key("rope.scaling.factor"))
                .unwrap_or(1.0)
                .max(1.0),
            false => 1.0,
        };
        let original_context = md_u32(ct, &key("rope.scaling.original_context_length")).ok();
        let rope_dim = md_u32(ct, &key("rope.dimension_count")).unwrap_or(head_dim);
        if rope_dim == 0 || !rope_dim.is_multiple_of(2) || rope_dim > head_dim {
            return Err(EmbeddedError::Format(format!(
                "bad rotary size {rope_dim} for heads of {head_dim}"
            )));
        }
        Ok(Hparams {
            n_layer,
            n_embd,
            n_head,
            n_kv_head: md_u32(ct, &key("attention.head_count_kv")).unwrap_or(n_head),
            head_dim,
            rope_dim,
            rope_base: md_f32(ct, &key("rope.freq_base")).unwrap_or(10_000.0),
            rms_eps: md_f32(ct, &key("attention.layer_norm_rms_epsilon")).unwrap_or(1e-5) as f64,
            context_length,
            rotation,
            qkv_bias,
            qk_norm,
            activation: match gemma {
                true => Activation::GeluTanh,
                false => Activation::Silu,
            },
            embed_scale: match gemma {
                true => (n_embd as f32).sqrt(),
                false => 1.0,
            },
            post_norms: matches!(a.as_str(), "gemma2" | "gemma3"),
            attn_scale,
            attn_softcap: match a.as_str() {
                "gemma2" => Some(md_f32(ct, &key("attn_logit_softcapping")).unwrap_or(50.0)),
                _ => None,
            },
            // Gemma 3 caps its logits only when the file says so (llama.cpp's default 0: none).
            final_softcap: match a.as_str() {
                "gemma2" => Some(md_f32(ct, &key("final_logit_softcapping")).unwrap_or(30.0)),
                "gemma3" => md_f32(ct, &key("final_logit_softcapping")).filter(|c| *c > 0.0),
                _ => None,
            },
            sliding_window,
            swa_pattern,
            rope_base_local: match a.as_str() {
                "gemma3" => Some(md_f32(ct, &key("rope.freq_base_swa")).unwrap_or(10_000.0)),
                _ => None,
            },
            rope_linear_scale,
            rope_attn_factor: md_f32(ct, &key("rope.scaling.attn_factor")).unwrap_or(1.0),
            rope_long_factors: original_context.is_some_and(|o| context_length > o),
            architecture,
        })
    }

    /// Whether layer `il` attends through the sliding window.
    pub fn is_local(&self, il: usize) -> bool {
        self.sliding_window > 0
            && (self.swa_pattern == 0 || il % self.swa_pattern < self.swa_pattern - 1)
    }

    /// The rotary frequencies of a layer, one per pair of rotated dimensions: llama's
    /// `base^(-2i/rope_dim)`, divided by the linear scale (global layers) and by Phi-3's
    /// per-frequency `factors` when the file has them.
    pub fn theta(&self, local: bool, factors: Option<&[f32]>) -> Vec<f32> {
        let (base, scale) = match (local, self.rope_base_local) {
            (true, Some(b)) => (b, 1.0),
            (true, None) => (self.rope_base, self.rope_linear_scale),
            (false, _) => (self.rope_base, self.rope_linear_scale),
        };
        (0..self.rope_dim / 2)
            .map(|i| {
                let f = factors.and_then(|f| f.get(i)).copied().unwrap_or(1.0);
                1.0 / base.powf((2 * i) as f32 / self.rope_dim as f32) / scale / f
            })
            .collect()
    }

    /// Whether local and global layers rotate differently (two tables of angles).
    pub fn local_rope_differs(&self) -> bool {
        self.rope_base_local.is_some() && self.sliding_window > 0
    }
}
