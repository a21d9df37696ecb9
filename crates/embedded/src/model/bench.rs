//! Tokens per second of our forward pass against the candle reference ([`super::reference`]) on
//! random-weight models of a realistic shape, one per architecture: Qwen2.5-0.5B's dimensions (24
//! layers, 896 wide, 14 query and 2 key/value heads of 64, feed-forward 4864) with a 32 000-token
//! vocabulary, Q8_0 weights (both paths compute them as stored), 2 threads. Ignored by default:
//! `cargo test -p toolbridge-embedded --lib model::bench -- --ignored --nocapture`
//! (`TB_BENCH_ARCHS=phi3,gemma2` to pick; `scripts/bench-embedded.sh --architectures` runs it).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Cursor;
use std::time::Instant;

use candle_core::quantized::gguf_file::{self, Content, Value};
use candle_core::quantized::{GgmlDType, QTensor};

use super::reference::{RefCache, RefWeights};
use super::tests::{norm_of, random};
use super::{argmax, KvCache, Weights};

const LAYERS: usize = 24;
const E: usize = 896;
const HEADS: usize = 14;
const KV_HEADS: usize = 2;
const HD: usize = 64;
const FF: usize = 4864;
const VOCAB: usize = 32_000;
const PROMPT: usize = 64;
const STEPS: usize = 32;

/// A random model of `arch` at the realistic shape, as GGUF bytes.
fn realistic(arch: &str) -> Vec<u8> {
    let key = |k: &str| format!("{arch}.{k}");
    let gemma = arch.starts_with("gemma");
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
        (key("attention.key_length"), Value::U32(HD as u32)),
        (key("context_length"), Value::U32(4096)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        (key("rope.freq_base"), Value::F32(10_000.0)),
    ];
    match arch {
        "gemma2" => md.push((key("attention.sliding_window"), Value::U32(4096))),
        "gemma3" => md.push((key("attention.sliding_window"), Value::U32(512))),
        _ => {}
    }
    let q8 = GgmlDType::Q8_0;
    let (qd, kvd) = (HEADS * HD, KV_HEADS * HD);
    let mut tensors: Vec<(String, QTensor)> = vec![
        ("token_embd.weight".into(), random((VOCAB, E), 1, q8, 0.1)),
        ("output_norm.weight".into(), norm_of(E, 2)),
    ];
    if !gemma {
        tensors.push(("output.weight".into(), random((VOCAB, E), 3, q8, 0.1)));
    }
    for l in 0..LAYERS {
        let s = 100 * (l as u64 + 1);
        let p = format!("blk.{l}");
        let mut add = |name: &str, t: QTensor| tensors.push((format!("{p}.{name}"), t));
        if arch == "phi3" {
            add("attn_qkv.weight", random((qd + 2 * kvd, E), s + 1, q8, 0.1));
            add("ffn_up.weight", random((2 * FF, E), s + 6, q8, 0.1));
        } else {
            add("attn_q.weight", random((qd, E), s + 1, q8, 0.1));
            add("attn_k.weight", random((kvd, E), s + 2, q8, 0.1));
            add("attn_v.weight", random((kvd, E), s + 3, q8, 0.1));
            add("ffn_gate.weight", random((FF, E), s + 5, q8, 0.1));
            add("ffn_up.weight", random((FF, E), s + 6, q8, 0.1));
        }
        add("attn_output.weight", random((E, qd), s + 4, q8, 0.1));
        add("ffn_down.weight", random((E, FF), s + 7, q8, 0.05));
        add("attn_norm.weight", norm_of(E, s + 8));
        add("ffn_norm.weight", norm_of(E, s + 9));
        if arch == "gemma2" || arch == "gemma3" {
            add("post_attention_norm.weight", norm_of(E, s + 10));
            add("post_ffw_norm.weight", norm_of(E, s + 11));
        }
        if arch == "qwen2" {
            add("attn_q.bias", norm_of(qd, s + 14));
            add("attn_k.bias", norm_of(kvd, s + 15));
            add("attn_v.bias", norm_of(kvd, s + 16));
        }
        if arch == "gemma3" {
            add("attn_q_norm.weight", norm_of(HD, s + 12));
            add("attn_k_norm.weight", norm_of(HD, s + 13));
        }
    }
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &md_refs, &t_refs).unwrap();
    out.into_inner()
}

/// Prompt and decoding tokens per second of `step` (a prompt of [`PROMPT`] tokens, then
/// [`STEPS`] greedy tokens one at a time).
fn timed(mut step: impl FnMut(&[u32]) -> Vec<f32>) -> (f64, f64) {
    let prompt: Vec<u32> = (0..PROMPT as u32)
        .map(|i| (i * 7919) % VOCAB as u32)
        .collect();
    let t = Instant::now();
    let mut logits = step(&prompt);
    let pp = PROMPT as f64 / t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..STEPS {
        let next = argmax(&logits) as u32;
        logits = step(&[next]);
    }
    (pp, STEPS as f64 / t.elapsed().as_secs_f64())
}

#[test]
#[ignore = "a benchmark: minutes, and ~1 GB of memory per architecture"]
fn tokens_per_second_against_candle() {
    let archs = std::env::var("TB_BENCH_ARCHS")
        .unwrap_or_else(|_| "llama,qwen2,phi3,gemma,gemma2,gemma3".into());
    for arch in archs.split(',').filter(|a| !a.is_empty()) {
        let bytes = realistic(arch);
        let mut r = Cursor::new(&bytes);
        let ct = Content::read(&mut r).unwrap();
        let mut ours = Weights::load(&ct, &mut r).unwrap();
        ours.set_threads(2);
        let candle = RefWeights::load(&ct, &mut r).unwrap();
        // Warm-up of both (thread pools, allocations).
        ours.forward(&[1, 2], &mut KvCache::default()).unwrap();
        candle.forward(&[1, 2], &mut RefCache::default()).unwrap();
        let mut cache = KvCache::default();
        let (pp, tg) = timed(|t| ours.forward(t, &mut cache).unwrap());
        let mut cache = RefCache::default();
        let (c_pp, c_tg) = timed(|t| candle.forward(t, &mut cache).unwrap());
        println!(
            "BENCH {arch}: ours prompt {pp:.1} tok/s, decode {tg:.1} tok/s; candle prompt \
             {c_pp:.1} tok/s, decode {c_tg:.1} tok/s; decode {:.2}x candle",
            tg / c_tg
        );
    }
}
