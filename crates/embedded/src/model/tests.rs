//! The forward pass against the previous candle implementation ([`super::reference`]): a tiny
//! random llama written in memory (prompt, decoding steps, cutting the cache back, several thread
//! counts), and the real default model when `TOOLBRIDGE_EMBEDDED_MODEL` names it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Cursor;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};

use super::reference::{RefCache, RefWeights};
use super::{argmax, KvCache, Weights};

const E: usize = 64;
const HEADS: usize = 4;
const KV_HEADS: usize = 2;
const FF: usize = 96;
const LAYERS: usize = 2;
const VOCAB: usize = 80;

pub(super) fn random(shape: (usize, usize), seed: u64, dtype: GgmlDType, amp: f32) -> QTensor {
    let mut state = seed.wrapping_mul(6364136223846793005) ^ 0x9E3779B97F4A7C15;
    let values: Vec<f32> = (0..shape.0 * shape.1)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * amp
        })
        .collect();
    let t = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, dtype).unwrap()
}

fn norm(seed: u64) -> QTensor {
    norm_of(E, seed)
}

pub(super) fn norm_of(n: usize, seed: u64) -> QTensor {
    // Around 1, not exactly: the norm weights must matter.
    let t = random((1, n), seed, GgmlDType::F32, 0.4)
        .dequantize(&Device::Cpu)
        .unwrap()
        .flatten_all()
        .unwrap();
    let t = (t + 1.0).unwrap();
    QTensor::quantize(&t, GgmlDType::F32).unwrap()
}

/// The weight types of a tiny model: `Exact` uses only types both implementations compute the
/// same way (Q8_0, F32); `Mixed` those the loader handles differently (Q4_1, Q4_0, Q5_1).
/// `Float` only F32: products without quantized activations, for deep models (six layers of
/// random weights turn a one-ulp difference into a flipped 8-bit rounding, and that into a
/// visible one).
#[derive(Clone, Copy, PartialEq)]
enum Types {
    Exact,
    Mixed,
    Float,
}

/// A llama with random weights and a separate output matrix.
fn tiny(types: Types) -> Vec<u8> {
    tiny_of("llama", types)
}

/// Qwen3's head size in the tiny model: wider than `E / HEADS`, as in the real Qwen3s, so the
/// attention width (`HEADS × 32`) differs from the stream's.
const QWEN3_HEAD: usize = 32;

/// The rotated dimensions of the tiny Phi-3's heads (of `E / HEADS` = 16), as Phi-4-mini rotates
/// 96 of 128.
const PHI3_ROPE: usize = 12;

/// The sliding window of the tiny Gemma 2/3s: shorter than the prompts the tests feed, so it
/// matters.
const WINDOW: usize = 4;

/// Layers of a tiny model: Gemma 3 needs six to have a global one after five local ones.
fn layers_of(arch: &str) -> usize {
    match arch {
        "gemma3" => 6,
        _ => LAYERS,
    }
}

/// A tiny model of `arch` (`llama`; `qwen2`, which adds q/k/v biases; `qwen3`, with per-head q/k
/// norms and a head size of its own; `phi3`, with fused q|k|v and gate|up tensors and long-context
/// rotary factors; `gemma`, `gemma2` and `gemma3`, with tied embeddings, GELU, wide heads, and
/// for the last two post-norms, soft-capping (Gemma 2, caps low enough to bite) and sliding
/// windows); `llama3`, a `llama` file with Llama 3.1's per-frequency rotary factors.
fn tiny_of(arch: &str, types: Types) -> Vec<u8> {
    let (arch, rope_freqs) = match arch {
        "llama3" => ("llama", true),
        other => (other, false),
    };
    let pick = |mixed: GgmlDType| match types {
        Types::Mixed => mixed,
        Types::Exact => GgmlDType::Q8_0,
        Types::Float => GgmlDType::F32,
    };
    let q8 = pick(GgmlDType::Q8_0);
    let key = |k: &str| format!("{arch}.{k}");
    let mut md = vec![
        (
            "general.architecture".to_owned(),
            Value::String(arch.into()),
        ),
        (key("block_count"), Value::U32(LAYERS as u32)),
        (key("embedding_length"), Value::U32(E as u32)),
        (key("feed_forward_length"), Value::U32(FF as u32)),
        (key("attention.head_count"), Value::U32(HEADS as u32)),
        (key("attention.head_count_kv"), Value::U32(KV_HEADS as u32)),
        (key("context_length"), Value::U32(256)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        (key("rope.freq_base"), Value::F32(10000.0)),
    ];
    let gemma = arch.starts_with("gemma");
    let hd = match arch {
        "qwen3" => QWEN3_HEAD,
        _ if gemma => QWEN3_HEAD,
        _ => E / HEADS,
    };
    if arch == "qwen3" || gemma {
        md.push((key("attention.key_length"), Value::U32(hd as u32)));
        md.push((key("attention.value_length"), Value::U32(hd as u32)));
    }
    let layers = layers_of(arch);
    md[1].1 = Value::U32(layers as u32);
    match arch {
        "phi3" => {
            // Phi-4-mini turns three quarters of each head (`partial_rotary_factor` 0.75).
            md.push((key("rope.dimension_count"), Value::U32(PHI3_ROPE as u32)));
            md.push((key("rope.scaling.original_context_length"), Value::U32(128)));
            md.push((key("rope.scaling.attn_factor"), Value::F32(1.2)));
        }
        "gemma2" => {
            md.push((key("attention.sliding_window"), Value::U32(WINDOW as u32)));
            md.push((key("attn_logit_softcapping"), Value::F32(2.0)));
            md.push((key("final_logit_softcapping"), Value::F32(3.0)));
        }
        "gemma3" => {
            md.push((key("attention.sliding_window"), Value::U32(WINDOW as u32)));
            md[8].1 = Value::F32(1_000_000.0);
            md.push((key("rope.scaling.type"), Value::String("linear".into())));
            md.push((key("rope.scaling.factor"), Value::F32(8.0)));
        }
        _ => {}
    }
    let qd = HEADS * hd;
    let kvd = KV_HEADS * hd;
    // The Gemmas multiply embeddings by √E: smaller ones keep the stream's values as large as
    // the others'.
    let embd_amp = if gemma { 0.25 } else { 2.0 };
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            random((VOCAB, E), 1, pick(GgmlDType::Q4_1), embd_amp),
        ),
        ("output_norm.weight".into(), norm(2)),
    ];
    // The Gemmas tie the output to the embeddings.
    if !gemma {
        tensors.push(("output.weight".into(), random((VOCAB, E), 3, q8, 1.0)));
    }
    if rope_freqs {
        // As Llama 3.1's converter writes them: 1 for the fast frequencies, up to the scaling
        // factor (8) for the slow ones.
        let half = E / HEADS / 2;
        let f: Vec<f32> = (0..half)
            .map(|i| 1.0 + 7.0 * i as f32 / (half - 1) as f32)
            .collect();
        let t = Tensor::from_vec(f, half, &Device::Cpu).unwrap();
        tensors.push((
            "rope_freqs.weight".into(),
            QTensor::quantize(&t, GgmlDType::F32).unwrap(),
        ));
    }
    if arch == "phi3" {
        // Factors well away from 1, different for short and long contexts.
        let factors = |seed: u64| {
            let t = random((1, PHI3_ROPE / 2), seed, GgmlDType::F32, 2.0);
            let t = t.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
            QTensor::quantize(&((t + 2.0).unwrap()), GgmlDType::F32).unwrap()
        };
        tensors.push(("rope_factors_long.weight".into(), factors(4)));
        tensors.push(("rope_factors_short.weight".into(), factors(5)));
    }
    for l in 0..layers {
        let s = 100 * (l as u64 + 1);
        let p = format!("blk.{l}");
        let mut add = |name: &str, t: QTensor| tensors.push((format!("{p}.{name}"), t));
        if arch == "phi3" {
            add(
                "attn_qkv.weight",
                random((qd + 2 * kvd, E), s + 1, pick(GgmlDType::Q4_1), 1.0),
            );
        } else {
            add("attn_q.weight", random((qd, E), s + 1, q8, 1.0));
            add(
                "attn_k.weight",
                random((kvd, E), s + 2, pick(GgmlDType::Q4_1), 1.0),
            );
            add(
                "attn_v.weight",
                random((kvd, E), s + 3, GgmlDType::F32, 1.0),
            );
        }
        add(
            "attn_output.weight",
            random((E, qd), s + 4, pick(GgmlDType::Q4_0), 0.5),
        );
        if arch == "phi3" {
            add(
                "ffn_up.weight",
                random((2 * FF, E), s + 6, pick(GgmlDType::Q5_1), 1.0),
            );
        } else {
            add("ffn_gate.weight", random((FF, E), s + 5, q8, 1.0));
            add(
                "ffn_up.weight",
                random((FF, E), s + 6, pick(GgmlDType::Q5_1), 1.0),
            );
        }
        add(
            "ffn_down.weight",
            random((E, FF), s + 7, pick(GgmlDType::Q4_1), 0.5),
        );
        add("attn_norm.weight", norm(s + 8));
        add("ffn_norm.weight", norm(s + 9));
        if arch == "qwen2" {
            let bias = |n: usize, seed: u64| {
                let t = random((1, n), seed, GgmlDType::F32, 2.0);
                let t = t.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
                QTensor::quantize(&t, GgmlDType::F32).unwrap()
            };
            add("attn_q.bias", bias(E, s + 10));
            add("attn_k.bias", bias(KV_HEADS * hd, s + 11));
            add("attn_v.bias", bias(KV_HEADS * hd, s + 12));
        }
        if arch == "qwen3" || arch == "gemma3" {
            add("attn_q_norm.weight", norm_of(hd, s + 13));
            add("attn_k_norm.weight", norm_of(hd, s + 14));
        }
        if arch == "gemma2" || arch == "gemma3" {
            add("post_attention_norm.weight", norm(s + 15));
            add("post_ffw_norm.weight", norm(s + 16));
        }
    }
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &md_refs, &t_refs).unwrap();
    out.into_inner()
}

fn load_both(bytes: &[u8], threads: usize) -> (Weights, RefWeights) {
    let mut r = Cursor::new(bytes);
    let ct = Content::read(&mut r).unwrap();
    let mut ours = Weights::load(&ct, &mut r).unwrap();
    ours.set_threads(threads);
    let reference = RefWeights::load(&ct, &mut r).unwrap();
    (ours, reference)
}

fn max_diff(a: &[f32], b: &[f32]) -> f32 {
    assert_eq!(a.len(), b.len());
    a.iter()
        .zip(b)
        .map(|(x, y)| (x - y).abs())
        .fold(0.0, f32::max)
}

#[track_caller]
fn assert_close(ours: &[f32], reference: &[f32], what: &str) {
    let scale = reference.iter().map(|v| v.abs()).fold(0.0, f32::max);
    let d = max_diff(ours, reference);
    assert!(
        d <= 1e-3 * scale.max(1.0),
        "{what}: logits differ by {d} (largest |logit| {scale})"
    );
}

#[test]
fn the_forward_pass_matches_the_candle_reference() {
    matches_the_reference(&tiny(Types::Exact));
}

#[test]
fn the_qwen2_forward_pass_matches_the_candle_reference() {
    let bytes = tiny_of("qwen2", Types::Exact);
    let (ours, _) = load_both(&bytes, 1);
    assert_eq!(ours.hparams.rotation, super::Rotation::Halves);
    assert!(ours.hparams.qkv_bias);
    matches_the_reference(&bytes);
    // The biases and the rotation matter: the same weights read as llama give other logits.
    let as_llama = tiny_of("llama", Types::Exact);
    let (qwen, _) = load_both(&bytes, 1);
    let (llama, _) = load_both(&as_llama, 1);
    let prompt = [5u32, 17, 3, 44];
    let a = qwen.forward(&prompt, &mut KvCache::default()).unwrap();
    let b = llama.forward(&prompt, &mut KvCache::default()).unwrap();
    assert!(max_diff(&a, &b) > 1e-2, "{}", max_diff(&a, &b));
}

/// Llama 3.1's `rope_freqs` are read and divide the rotary frequencies as the reference's do;
/// without them the same weights give other logits.
#[test]
fn the_llama3_forward_pass_with_rope_freqs_matches_the_candle_reference() {
    // Float weights: with 8-bit ones both paths agree to 5e-7 on every step but one, where an
    // activation on a rounding edge of its 8-bit block goes the other way (0.02 apart).
    let bytes = tiny_of("llama3", Types::Float);
    matches_the_reference(&bytes);
    let with = load_edited(&bytes, |_| {});
    let without = load_edited(&bytes, |ct| {
        ct.tensor_infos.remove("rope_freqs.weight");
    });
    // A long enough prompt that the slow frequencies turn measurably.
    let prompt: Vec<u32> = (0..48).map(|i| (i * 7 + 3) % VOCAB as u32).collect();
    let a = logits_of(&with, &prompt);
    let b = logits_of(&without, &prompt);
    assert!(max_diff(&a, &b) > 1e-2, "{}", max_diff(&a, &b));
}

#[test]
fn the_qwen3_forward_pass_matches_the_candle_reference() {
    let bytes = tiny_of("qwen3", Types::Exact);
    let (ours, _) = load_both(&bytes, 1);
    let hp = &ours.hparams;
    assert_eq!(hp.rotation, super::Rotation::Halves);
    assert!(hp.qk_norm && !hp.qkv_bias);
    assert_eq!(hp.head_dim, QWEN3_HEAD);
    matches_the_reference(&bytes);
    // The q/k norms matter: the same file with unit norm weights gives other logits.
    let mut r = Cursor::new(&bytes);
    let ct = Content::read(&mut r).unwrap();
    let mut unit = Weights::load(&ct, &mut r).unwrap();
    for layer in &mut unit.layers {
        layer.q_norm.iter_mut().for_each(|w| *w = 1.0);
        layer.k_norm.iter_mut().for_each(|w| *w = 1.0);
    }
    let prompt = [5u32, 17, 3, 44];
    let a = ours.forward(&prompt, &mut KvCache::default()).unwrap();
    let b = unit.forward(&prompt, &mut KvCache::default()).unwrap();
    assert!(max_diff(&a, &b) > 1e-2, "{}", max_diff(&a, &b));
}

/// Logits of the prompt the comparisons feed, on a fresh cache.
fn logits_of(w: &Weights, prompt: &[u32]) -> Vec<f32> {
    w.forward(prompt, &mut KvCache::default()).unwrap()
}

/// `bytes` loaded after `edit` changed its metadata or tensor list.
fn load_edited(bytes: &[u8], edit: impl FnOnce(&mut Content)) -> Weights {
    let mut r = Cursor::new(bytes);
    let mut ct = Content::read(&mut r).unwrap();
    edit(&mut ct);
    Weights::load(&ct, &mut r).unwrap()
}

/// With the weight types the two paths handle differently (4-bit kept as 4-bit here, converted
/// there), ours is as close to exact products on the file's weights as candle's.
fn as_exact_as_candle(bytes: &[u8], what: &str) {
    let mut r = Cursor::new(bytes);
    let ct = Content::read(&mut r).unwrap();
    let mut ours = Weights::load(&ct, &mut r).unwrap();
    ours.set_threads(2);
    assert!(
        ours.requantized > 0,
        "{what}: the mixed file has 4/5-bit tensors"
    );
    let candle = RefWeights::load(&ct, &mut r).unwrap();
    let exact = RefWeights::load_dense(&ct, &mut r).unwrap();
    // The prompt, then steps: a mean over positions, not one position's luck.
    let steps = [5u32, 3, 58, 9, 7, 21, 33];
    let run_ref = |w: &RefWeights| {
        let mut cache = RefCache::default();
        let mut all = vec![w.forward(&LONG_PROMPT, &mut cache).unwrap()];
        all.extend(steps.iter().map(|t| w.forward(&[*t], &mut cache).unwrap()));
        all
    };
    let mut cache = KvCache::default();
    let mut l_ours = vec![ours.forward(&LONG_PROMPT, &mut cache).unwrap()];
    l_ours.extend(
        steps
            .iter()
            .map(|t| ours.forward(&[*t], &mut cache).unwrap()),
    );
    let l_exact = run_ref(&exact);
    let (e_ours, e_candle) = (
        error_vs(&l_exact, &l_ours),
        error_vs(&l_exact, &run_ref(&candle)),
    );
    eprintln!("{what}: errors vs exact: ours {e_ours}, candle {e_candle}");
    assert!(
        e_ours <= e_candle * 1.25 + 1e-4,
        "{what}: ours {e_ours} vs candle {e_candle} from exact"
    );
}

/// A prompt longer than [`WINDOW`], so sliding windows cut it.
const LONG_PROMPT: [u32; 12] = [5, 17, 3, 44, 60, 2, 9, 71, 12, 13, 40, 41];

#[test]
fn the_phi3_forward_pass_matches_the_candle_reference() {
    let bytes = tiny_of("phi3", Types::Exact);
    let (ours, _) = load_both(&bytes, 1);
    let hp = &ours.hparams;
    assert_eq!(hp.rotation, super::Rotation::Halves);
    assert_eq!(hp.activation, super::Activation::Silu);
    // A context (256) beyond the original one (128): the long factors apply, as in llama.cpp.
    assert!(hp.rope_long_factors);
    assert_eq!(hp.rope_attn_factor, 1.2);
    assert_eq!((hp.head_dim, hp.rope_dim), (E / HEADS, PHI3_ROPE));
    matches_the_reference(&bytes);
    as_exact_as_candle(&tiny_of("phi3", Types::Mixed), "phi3");
    // The factors matter, and which set is chosen: without them, or with the short ones, the
    // logits differ.
    let base = logits_of(&ours, &LONG_PROMPT);
    let without = load_edited(&bytes, |ct| {
        ct.tensor_infos.remove("rope_factors_long.weight");
    });
    let short = load_edited(&bytes, |ct| {
        ct.metadata.insert(
            "phi3.rope.scaling.original_context_length".into(),
            Value::U32(4096),
        );
    });
    assert!(!short.hparams.rope_long_factors);
    for (other, what) in [(without, "no factors"), (short, "short factors")] {
        let d = max_diff(&base, &logits_of(&other, &LONG_PROMPT));
        assert!(d > 1e-2, "{what}: {d}");
    }
    // The partial rotation matters: without factors, turning whole heads answers otherwise.
    let no_factors = |ct: &mut Content| {
        ct.tensor_infos.remove("rope_factors_long.weight");
        ct.tensor_infos.remove("rope_factors_short.weight");
    };
    let partial = load_edited(&bytes, no_factors);
    let whole = load_edited(&bytes, |ct| {
        no_factors(ct);
        ct.metadata
            .insert("phi3.rope.dimension_count".into(), Value::U32(16));
    });
    assert_eq!(whole.hparams.rope_dim, 16);
    let d = max_diff(
        &logits_of(&partial, &LONG_PROMPT),
        &logits_of(&whole, &LONG_PROMPT),
    );
    assert!(d > 1e-2, "partial rotation: {d}");
    // A rotary size the heads cannot hold is refused.
    let mut r = Cursor::new(&bytes);
    let mut ct = Content::read(&mut r).unwrap();
    ct.metadata
        .insert("phi3.rope.dimension_count".into(), Value::U32(18));
    let err = Weights::load(&ct, &mut r).err().unwrap().to_string();
    assert!(err.contains("rotary size 18"), "{err}");
}

#[test]
fn the_gemma_forward_passes_match_the_candle_reference() {
    for arch in ["gemma", "gemma2", "gemma3"] {
        let bytes = tiny_of(arch, Types::Float);
        let (ours, reference) = load_both(&bytes, 1);
        let hp = &ours.hparams;
        assert_eq!(hp.activation, super::Activation::GeluTanh, "{arch}");
        assert_eq!(hp.embed_scale, (E as f32).sqrt(), "{arch}");
        assert_eq!(hp.head_dim, QWEN3_HEAD, "{arch}");
        assert!(ours.output.is_none(), "{arch}: tied output");
        assert_eq!(hp.post_norms, arch != "gemma", "{arch}");
        matches_the_reference(&bytes);
        // A prompt past the window, then steps, across thread counts.
        for threads in [1, 3] {
            let (ours, _) = load_both(&bytes, threads);
            let (mut c1, mut c2) = (KvCache::default(), RefCache::default());
            let a = ours.forward(&LONG_PROMPT, &mut c1).unwrap();
            let b = reference.forward(&LONG_PROMPT, &mut c2).unwrap();
            assert_close(&a, &b, &format!("{arch} long prompt, {threads} threads"));
            for t in [7u32, 8, 9] {
                let a = ours.forward(&[t], &mut c1).unwrap();
                let b = reference.forward(&[t], &mut c2).unwrap();
                assert_close(&a, &b, &format!("{arch} step {t}, {threads} threads"));
            }
        }
        as_exact_as_candle(&tiny_of(arch, Types::Mixed), arch);
    }
}

#[test]
fn gemma_windows_caps_and_local_rotation_change_the_answer() {
    // Gemma 2: every second layer local, scores and logits capped.
    let g2 = tiny_of("gemma2", Types::Exact);
    let (ours, _) = load_both(&g2, 1);
    let hp = &ours.hparams;
    assert_eq!(
        (hp.sliding_window, hp.attn_softcap, hp.final_softcap),
        (WINDOW, Some(2.0), Some(3.0))
    );
    assert!(hp.is_local(0) && !hp.is_local(1));
    let base = logits_of(&ours, &LONG_PROMPT);
    assert!(
        base.iter().all(|v| v.abs() <= 3.0),
        "logits are capped at 3"
    );
    let wide = load_edited(&g2, |ct| {
        ct.metadata
            .insert("gemma2.attention.sliding_window".into(), Value::U32(1024));
    });
    let uncapped = load_edited(&g2, |ct| {
        ct.metadata
            .insert("gemma2.attn_logit_softcapping".into(), Value::F32(1e6));
    });
    for (other, what) in [(wide, "no window"), (uncapped, "no score cap")] {
        let d = max_diff(&base, &logits_of(&other, &LONG_PROMPT));
        assert!(d > 1e-3, "{what}: {d}");
    }
    // Within the window the window changes nothing.
    let short = &LONG_PROMPT[..WINDOW];
    let wide = load_edited(&g2, |ct| {
        ct.metadata
            .insert("gemma2.attention.sliding_window".into(), Value::U32(1024));
    });
    assert_eq!(logits_of(&ours, short), logits_of(&wide, short));
    // Gemma 3: five local layers, then a global one; local layers rotate with their own base.
    let g3 = tiny_of("gemma3", Types::Exact);
    let (ours, _) = load_both(&g3, 1);
    let hp = &ours.hparams;
    let local: Vec<bool> = (0..6).map(|l| hp.is_local(l)).collect();
    assert_eq!(local, [true, true, true, true, true, false]);
    assert_eq!(hp.rope_base_local, Some(10_000.0));
    assert_eq!(hp.rope_linear_scale, 8.0);
    assert_eq!(ours.thetas.len(), 2);
    let base = logits_of(&ours, &LONG_PROMPT);
    let same_base = load_edited(&g3, |ct| {
        ct.metadata
            .insert("gemma3.rope.freq_base_swa".into(), Value::F32(1_000_000.0));
    });
    let d = max_diff(&base, &logits_of(&same_base, &LONG_PROMPT));
    assert!(d > 1e-3, "local rotary base: {d}");
}

#[test]
fn a_qwen3_without_its_head_norms_is_refused() {
    let bytes = tiny_of("qwen3", Types::Exact);
    let mut r = Cursor::new(&bytes);
    let mut ct = Content::read(&mut r).unwrap();
    ct.tensor_infos.remove("blk.1.attn_k_norm.weight");
    let err = Weights::load(&ct, &mut r).err().unwrap().to_string();
    assert!(err.contains("attn_k_norm"), "{err}");
}

#[test]
fn an_unsupported_architecture_is_named_with_the_supported_ones() {
    let bytes = tiny_of("gpt-neox", Types::Exact);
    let mut r = Cursor::new(&bytes);
    let content = Content::read(&mut r).unwrap();
    let err = Weights::load(&content, &mut r).err().unwrap().to_string();
    assert!(err.contains("`gpt-neox`"), "{err}");
    assert!(err.contains(super::SUPPORTED_ARCHITECTURES), "{err}");
}

fn matches_the_reference(bytes: &[u8]) {
    let bytes = bytes.to_vec();
    for threads in [1, 2, 3] {
        let (ours, reference) = load_both(&bytes, threads);
        let (mut c1, mut c2) = (KvCache::default(), RefCache::default());
        let prompt = [5u32, 17, 3, 44, 60, 2, 9, 71];
        let a = ours.forward(&prompt, &mut c1).unwrap();
        let b = reference.forward(&prompt, &mut c2).unwrap();
        assert_eq!(a.len(), VOCAB);
        assert_close(&a, &b, &format!("prompt, {threads} threads"));
        // Decoding steps, each one token.
        let mut next = argmax(&b) as u32;
        for step in 0..6 {
            let a = ours.forward(&[next], &mut c1).unwrap();
            let b = reference.forward(&[next], &mut c2).unwrap();
            assert_close(&a, &b, &format!("step {step}, {threads} threads"));
            next = (argmax(&b) as u32 + step) % VOCAB as u32;
        }
        assert_eq!(c1.tokens(), c2.tokens());
        // Cut back into the prompt and continue with other tokens (a second conversation round).
        c1.truncate(5).unwrap();
        c2.truncate(5).unwrap();
        assert_eq!(c1.tokens(), &prompt[..5]);
        let a = ours.forward(&[30, 31, 32], &mut c1).unwrap();
        let b = reference.forward(&[30, 31, 32], &mut c2).unwrap();
        assert_close(&a, &b, &format!("after truncate, {threads} threads"));
        let a = ours.forward(&[33], &mut c1).unwrap();
        let b = reference.forward(&[33], &mut c2).unwrap();
        assert_close(&a, &b, &format!("step after truncate, {threads} threads"));
        // Cleared: the same as a fresh cache.
        c1.clear();
        let again = ours.forward(&prompt, &mut c1).unwrap();
        let fresh = ours.forward(&prompt, &mut KvCache::default()).unwrap();
        assert_eq!(again, fresh);
    }
}

/// Mean over positions of the largest logit error against exact products.
fn error_vs(exact: &[Vec<f32>], got: &[Vec<f32>]) -> f32 {
    exact
        .iter()
        .zip(got)
        .map(|(x, g)| max_diff(x, g))
        .sum::<f32>()
        / exact.len() as f32
}

/// With 4-bit weights kept as stored (the candle path re-quantizes them to 8 bits first), ours is
/// at least as close to exact products on the stored weights as the candle path; the `q4_0`
/// target (5-bit weights to 4-bit) stays close too.
#[test]
fn mixed_weight_types_are_as_exact_as_the_candle_path() {
    let bytes = tiny(Types::Mixed);
    let mut r = Cursor::new(&bytes[..]);
    let ct = Content::read(&mut r).unwrap();
    let ours = Weights::load(&ct, &mut r).unwrap();
    // token_embd, and per layer attn_k, attn_output, ffn_up, ffn_down.
    assert_eq!(ours.requantized, 1 + LAYERS * 4);
    let ours_q4 = Weights::load_as(&ct, &mut r, GgmlDType::Q4_0).unwrap();
    let candle = RefWeights::load(&ct, &mut r).unwrap();
    let exact = RefWeights::load_dense(&ct, &mut r).unwrap();
    let prompt = [3u32, 1, 4, 1, 5, 9, 2, 6];
    let steps = [5u32, 3, 58, 9, 7];
    let run = |f: &dyn Fn(&[u32], bool) -> Vec<f32>| -> Vec<Vec<f32>> {
        let mut all = vec![f(&prompt, true)];
        all.extend(steps.iter().map(|t| f(&[*t], false)));
        all
    };
    let cache = std::cell::RefCell::new(KvCache::default());
    let ref_cache = std::cell::RefCell::new(RefCache::default());
    let with_ours = |w: &Weights| {
        run(&|t, fresh| {
            if fresh {
                cache.borrow_mut().clear();
            }
            w.forward(t, &mut cache.borrow_mut()).unwrap()
        })
    };
    let with_ref = |w: &RefWeights| {
        run(&|t, fresh| {
            if fresh {
                *ref_cache.borrow_mut() = RefCache::default();
            }
            w.forward(t, &mut ref_cache.borrow_mut()).unwrap()
        })
    };
    let l_exact = with_ref(&exact);
    let scale = l_exact[0].iter().map(|v| v.abs()).fold(0.0, f32::max);
    let (e_ours, e_candle) = (
        error_vs(&l_exact, &with_ours(&ours)),
        error_vs(&l_exact, &with_ref(&candle)),
    );
    let e_q4 = error_vs(&l_exact, &with_ours(&ours_q4));
    eprintln!(
        "errors vs exact: ours {e_ours}, candle {e_candle}, q4_0 {e_q4} (logits up to {scale})"
    );
    assert!(
        e_ours <= e_candle * 1.25 + 1e-4,
        "ours {e_ours} vs candle {e_candle}"
    );
    assert!(e_q4 < 0.1 * scale, "q4_0 {e_q4}");
}

#[test]
fn feeding_a_prompt_at_once_or_token_by_token_agrees() {
    let (ours, _) = load_both(&tiny(Types::Mixed), 2);
    let prompt = [1u32, 2, 3, 4, 5, 6, 7];
    let all = ours.forward(&prompt, &mut KvCache::default()).unwrap();
    let mut cache = KvCache::default();
    let mut last = Vec::new();
    for t in prompt {
        last = ours.forward(&[t], &mut cache).unwrap();
    }
    // Batched rows quantize the same activations, so only the attention sums' order differs.
    assert!(max_diff(&all, &last) < 1e-3, "{}", max_diff(&all, &last));
}

#[test]
fn bad_input_is_refused_and_leaves_the_cache_usable() {
    let (ours, _) = load_both(&tiny(Types::Exact), 2);
    let mut cache = KvCache::default();
    assert!(ours.forward(&[], &mut cache).is_err());
    assert!(ours.forward(&[VOCAB as u32], &mut cache).is_err());
    let long = vec![1u32; 257];
    assert!(matches!(
        ours.forward(&long, &mut cache),
        Err(crate::error::EmbeddedError::ContextFull { .. })
    ));
    assert!(cache.tokens().is_empty());
    let a = ours.forward(&[1, 2], &mut cache).unwrap();
    let b = ours.forward(&[1, 2], &mut KvCache::default()).unwrap();
    assert_eq!(a, b);
}

/// Greedy decoding as the engine does it by default (repetition penalty 1.1 over the last 64
/// generated tokens); returns the tokens.
fn greedy(mut step: impl FnMut(&[u32]) -> Vec<f32>, prompt: &[u32], n: usize) -> Vec<u32> {
    let mut logits = step(prompt);
    let mut out: Vec<u32> = Vec::new();
    for _ in 0..n {
        let mut seen = std::collections::HashSet::new();
        for &t in out.iter().rev().take(64) {
            if seen.insert(t) {
                let v = &mut logits[t as usize];
                *v = if *v > 0.0 { *v / 1.1 } else { *v * 1.1 };
            }
        }
        let t = argmax(&logits) as u32;
        out.push(t);
        logits = step(&[t]);
    }
    out
}

/// The logits after the prompt (fed at once) and after each token of `continuation` (one by one).
fn teacher_forced(
    mut step: impl FnMut(&[u32]) -> Vec<f32>,
    prompt: &[u32],
    continuation: &[u32],
) -> Vec<Vec<f32>> {
    let mut all = vec![step(prompt)];
    for &t in continuation {
        all.push(step(&[t]));
    }
    all
}

/// With the real model, quantizing the activations to 8 bits makes every implementation's logits
/// differ from exact products by ~0.5–1.5 (the candle path's own batched and one-token-at-a-time
/// results differ by as much), so ours cannot equal the candle path to 1e-2. What must hold: ours
/// is as close to exact products (the stored weights as dense f32) as the candle path is, and
/// picks the same top token as often.
#[test]
fn the_real_model_is_as_close_to_exact_products_as_the_candle_path() {
    let Some(path) = std::env::var_os("TOOLBRIDGE_EMBEDDED_MODEL").filter(|p| !p.is_empty()) else {
        eprintln!("skipped: TOOLBRIDGE_EMBEDDED_MODEL is not set (scripts/test.sh sets it)");
        return;
    };
    let n: usize = std::env::var("TOOLBRIDGE_COMPARE_TOKENS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(24);
    let options = crate::engine::EngineOptions {
        threads: Some(2),
        q4_0: false,
    };
    let engine = crate::engine::Engine::load(std::path::Path::new(&path), &options).unwrap();
    let prompt = engine.render(&[crate::template::TemplateMessage::new(
        "user",
        "Write a short story about a robot who learns to paint. Describe the colours it discovers, the first painting it makes, and what the other robots think of it.",
    )]);
    let ids = engine.tokenizer().encode(&prompt).unwrap();
    let open = || {
        let mut file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
        let ct = Content::read(&mut file).unwrap();
        (ct, file)
    };
    let (ct, mut file) = open();
    let candle = RefWeights::load(&ct, &mut file).unwrap();
    let (ct, mut file) = open();
    let exact = RefWeights::load_dense(&ct, &mut file).unwrap();
    let ours = engine.weights();

    let mut c = RefCache::default();
    let candle_tokens = greedy(|t| candle.forward(t, &mut c).unwrap(), &ids, n);
    let mut c = KvCache::default();
    let our_tokens = greedy(|t| ours.forward(t, &mut c).unwrap(), &ids, n);
    let mut c = RefCache::default();
    let exact_tokens = greedy(|t| exact.forward(t, &mut c).unwrap(), &ids, n);
    let same = |a: &[u32], b: &[u32]| a.iter().zip(b).take_while(|(a, b)| a == b).count();
    eprintln!(
        "greedy, tokens identical before the first difference (of {n}): ours/candle {}, \
         ours/exact {}, candle/exact {}",
        same(&our_tokens, &candle_tokens),
        same(&our_tokens, &exact_tokens),
        same(&candle_tokens, &exact_tokens)
    );
    // Greedy decoding follows exact products at least as long with ours as with candle's path
    // (on the bench prompt: 20 tokens against 2 — candle's re-quantization of the Q4_1 weights to
    // Q8_0 flips a near-tie at the third token).
    assert!(same(&our_tokens, &exact_tokens) >= same(&candle_tokens, &exact_tokens));

    let mut c = RefCache::default();
    let l_candle = teacher_forced(|t| candle.forward(t, &mut c).unwrap(), &ids, &candle_tokens);
    let mut c = RefCache::default();
    let l_exact = teacher_forced(|t| exact.forward(t, &mut c).unwrap(), &ids, &candle_tokens);
    let mut c = KvCache::default();
    let l_ours = teacher_forced(|t| ours.forward(t, &mut c).unwrap(), &ids, &candle_tokens);
    let (mut d_ours, mut d_candle, mut agree_ours, mut agree_candle, mut d_between) =
        (0f32, 0f32, 0, 0, 0f32);
    for ((o, c), x) in l_ours.iter().zip(&l_candle).zip(&l_exact) {
        d_ours += max_diff(o, x);
        d_candle += max_diff(c, x);
        d_between = d_between.max(max_diff(o, c));
        agree_ours += usize::from(argmax(o) == argmax(x));
        agree_candle += usize::from(argmax(c) == argmax(x));
    }
    let positions = l_exact.len() as f32;
    let (d_ours, d_candle) = (d_ours / positions, d_candle / positions);
    eprintln!(
        "mean largest logit error vs exact products: ours {d_ours:.3}, candle {d_candle:.3}; \
         top token as exact: ours {agree_ours}, candle {agree_candle} of {positions}; \
         ours vs candle at most {d_between:.3}"
    );
    assert!(
        d_ours <= d_candle * 1.25 + 0.05,
        "ours {d_ours} vs candle {d_candle}"
    );
    assert!(
        agree_ours + 2 >= agree_candle,
        "{agree_ours} vs {agree_candle}"
    );
    assert!(d_between < 5.0, "ours and candle differ by {d_between}");
}
