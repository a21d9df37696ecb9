//! A tiny llama GGUF with random weights and a small byte-level BPE vocabulary, written in memory.

#![allow(dead_code)]

use std::io::Cursor;

use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Tensor};
use serde_json::json;
use toolbridge_embedded::Engine;
use toolbridge_protocol::types::ToolSpec;

/// SmolLM2's template (ChatML with a default system prompt).
pub const TEMPLATE: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a tiny test model.<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

/// The shape of Qwen3's template (tool results in a user turn, `namespace`, `is string`, the
/// thinking switch),
/// without the Python string methods the original also calls.
pub const QWEN3_TEMPLATE: &str = "{%- if messages[0].role == 'system' %}{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}{%- endif %}{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}{%- for message in messages %}{%- if message.content is string %}{%- set content = message.content %}{%- else %}{%- set content = '' %}{%- endif %}{%- if (message.role == 'user') or (message.role == 'system' and not loop.first) or message.role == 'assistant' %}{{- '<|im_start|>' + message.role + '\n' + content + '<|im_end|>' + '\n' }}{%- elif message.role == 'tool' %}{%- if loop.first or (messages[loop.index0 - 1].role != 'tool') %}{{- '<|im_start|>user' }}{%- endif %}{{- '\n<tool_response>\n' + content + '\n</tool_response>' }}{%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}{{- '<|im_end|>\n' }}{%- endif %}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\n\n</think>\n\n' }}{%- endif %}{%- endif %}";

/// GPT-2's byte alphabet, in byte order.
pub fn byte_chars() -> Vec<char> {
    let mut printable: Vec<u32> = (33..=126).collect();
    printable.extend(0xA1..=0xAC);
    printable.extend(0xAE..=0xFF);
    let mut shifted = 0;
    (0u32..=255)
        .map(|b| {
            let c = if printable.contains(&b) {
                b
            } else {
                shifted += 1;
                255 + shifted
            };
            char::from_u32(c).unwrap()
        })
        .collect()
}

/// Merges (in the byte-level alphabet: `Ġ` is a space).
pub const MERGES: &[(&str, &str)] = &[
    ("t", "o"),
    ("o", "l"),
    ("to", "ol"),
    ("_", "c"),
    ("a", "l"),
    ("al", "l"),
    ("1", "2"),
    ("\"", ":"),
    ("Ġ", "\""),
    ("n", "a"),
    ("na", "m"),
    ("nam", "e"),
    ("P", "a"),
    ("Pa", "r"),
    ("Par", "i"),
    ("Pari", "s"),
    ("h", "e"),
    ("l", "l"),
    ("he", "ll"),
    ("hell", "o"),
];

pub const SPECIAL: &[&str] = &["<|endoftext|>", "<|im_start|>", "<|im_end|>"];

/// Llama 3's control tokens (the begin and end of the text first, as in its files).
pub const LLAMA3_SPECIAL: &[&str] = &[
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
];

/// The shape of Llama 3.1/3.2's template (ours, not a copy): the begin token, the date and
/// `tools` switches with `is defined`, the system message sliced off the list and trimmed, the
/// header tokens, tool results as `ipython` turns, and a call written as
/// `{"name": …, "parameters": …}`.
pub const LLAMA3_TEMPLATE: &str = "{{- bos_token }}{%- if not date_string is defined %}{%- set date_string = \"26 Jul 2024\" %}{%- endif %}{%- if not tools is defined %}{%- set tools = none %}{%- endif %}{%- if messages[0]['role'] == 'system' %}{%- set system_message = messages[0]['content']|trim %}{%- set messages = messages[1:] %}{%- else %}{%- set system_message = \"\" %}{%- endif %}{{- '<|start_header_id|>system<|end_header_id|>\n\n' }}{%- if tools is not none %}{{- 'Environment: ipython\n' }}{%- endif %}{{- 'Today Date: ' + date_string + '\n\n' }}{{- system_message }}{{- '<|eot_id|>' }}{%- for message in messages %}{%- if message.role == 'tool' or message.role == 'ipython' %}{{- '<|start_header_id|>ipython<|end_header_id|>\n\n' + message['content'] + '<|eot_id|>' }}{%- elif 'tool_calls' in message %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"' + message.tool_calls[0].function.name + '\", \"parameters\": ' + message.tool_calls[0].function.arguments | tojson + '}<|eot_id|>' }}{%- else %}{{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{%- endif %}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}";

/// The vocabulary: the specials, the 256 byte tokens, then one token per merge.
pub fn vocab() -> (Vec<String>, Vec<i32>) {
    vocab_with(SPECIAL)
}

/// [`vocab`] with other control tokens first.
pub fn vocab_with(special: &[&str]) -> (Vec<String>, Vec<i32>) {
    let mut tokens: Vec<String> = special.iter().map(|s| s.to_string()).collect();
    let mut types = vec![3; special.len()];
    for c in byte_chars() {
        tokens.push(c.to_string());
        types.push(1);
    }
    for (a, b) in MERGES {
        tokens.push(format!("{a}{b}"));
        types.push(1);
    }
    (tokens, types)
}

const N_EMBD: usize = 64;
const N_HEAD: usize = 4;
const N_KV: usize = 2;
const N_FF: usize = 128;
const N_LAYER: usize = 2;

fn random(shape: (usize, usize), seed: u64, dtype: GgmlDType) -> QTensor {
    // A small deterministic generator, so the model is the same on every run.
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let n = shape.0 * shape.1;
    let values: Vec<f32> = (0..n)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32 - 0.5) * 0.5
        })
        .collect();
    let t = Tensor::from_vec(values, shape, &Device::Cpu).unwrap();
    QTensor::quantize(&t, dtype).unwrap()
}

fn ones(n: usize) -> QTensor {
    let t = Tensor::ones(n, candle_core::DType::F32, &Device::Cpu).unwrap();
    QTensor::quantize(&t, GgmlDType::F32).unwrap()
}

/// Writes the tiny model; returns the GGUF bytes.
pub fn tiny_gguf() -> Vec<u8> {
    tiny_gguf_of("llama", "smollm")
}

/// A tiny model of another architecture (`qwen2`: with q/k/v biases; `qwen3`: per-head q/k
/// norms, heads twice as wide as `N_EMBD / N_HEAD`, and Qwen3's template; `llama3`: a `llama`
/// file with Llama 3's control tokens and template shape, its rotary base and per-frequency
/// factors) and pre-tokenizer.
pub fn tiny_gguf_of(arch: &str, pre: &str) -> Vec<u8> {
    let (arch, llama3) = match arch {
        "llama3" => ("llama", true),
        other => (other, false),
    };
    let hd = match arch {
        "qwen3" => 2 * N_EMBD / N_HEAD,
        _ => N_EMBD / N_HEAD,
    };
    let template = match arch {
        "qwen3" => QWEN3_TEMPLATE,
        _ if llama3 => LLAMA3_TEMPLATE,
        _ => TEMPLATE,
    };
    let (tokens, types) = vocab_with(if llama3 { LLAMA3_SPECIAL } else { SPECIAL });
    // Llama 3's begin and end tokens are its first two; the others' are `<|endoftext|>` (0)
    // and `<|im_start|>`/`<|im_end|>` around it.
    let (bos, eos) = if llama3 { (0, 4) } else { (1, 2) };
    let rope_base = if llama3 { 500_000.0 } else { 10_000.0 };
    let n_vocab = tokens.len();
    let merges: Vec<Value> = MERGES
        .iter()
        .map(|(a, b)| Value::String(format!("{a} {b}")))
        .collect();
    let key = |k: &str| format!("{arch}.{k}");
    let mut md: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(arch.into())),
        (key("block_count"), Value::U32(N_LAYER as u32)),
        (key("embedding_length"), Value::U32(N_EMBD as u32)),
        (key("feed_forward_length"), Value::U32(N_FF as u32)),
        (key("attention.head_count"), Value::U32(N_HEAD as u32)),
        (key("attention.head_count_kv"), Value::U32(N_KV as u32)),
        (key("rope.dimension_count"), Value::U32(hd as u32)),
        (key("attention.key_length"), Value::U32(hd as u32)),
        (key("context_length"), Value::U32(2048)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-5)),
        (key("rope.freq_base"), Value::F32(rope_base)),
    ];
    let tokenizer_md: Vec<(&str, Value)> = vec![
        ("tokenizer.ggml.model", Value::String("gpt2".into())),
        ("tokenizer.ggml.pre", Value::String(pre.into())),
        (
            "tokenizer.ggml.tokens",
            Value::Array(tokens.iter().map(|t| Value::String(t.clone())).collect()),
        ),
        (
            "tokenizer.ggml.token_type",
            Value::Array(types.iter().map(|t| Value::I32(*t)).collect()),
        ),
        ("tokenizer.ggml.merges", Value::Array(merges)),
        ("tokenizer.ggml.bos_token_id", Value::U32(bos)),
        ("tokenizer.ggml.eos_token_id", Value::U32(eos)),
        ("tokenizer.chat_template", Value::String(template.into())),
    ];
    md.extend(tokenizer_md.into_iter().map(|(k, v)| (k.to_owned(), v)));
    let mut tensors: Vec<(String, QTensor)> = vec![
        // Q4_1, like the default model: converted to Q8_0 at load.
        (
            "token_embd.weight".into(),
            random((n_vocab, N_EMBD), 1, GgmlDType::Q4_1),
        ),
        ("output_norm.weight".into(), ones(N_EMBD)),
    ];
    if llama3 {
        // Llama 3.1's factors: 1 for the fast frequencies up to 8 for the slow ones.
        let half = hd / 2;
        let f: Vec<f32> = (0..half)
            .map(|i| 1.0 + 7.0 * i as f32 / (half - 1) as f32)
            .collect();
        let t = Tensor::from_vec(f, half, &Device::Cpu).unwrap();
        tensors.push((
            "rope_freqs.weight".into(),
            QTensor::quantize(&t, GgmlDType::F32).unwrap(),
        ));
    }
    let qd = N_HEAD * hd;
    for l in 0..N_LAYER {
        let s = 100 * (l as u64 + 1);
        let p = format!("blk.{l}");
        tensors.push((
            format!("{p}.attn_q.weight"),
            random((qd, N_EMBD), s + 1, GgmlDType::Q8_0),
        ));
        tensors.push((
            format!("{p}.attn_k.weight"),
            random((N_KV * hd, N_EMBD), s + 2, GgmlDType::Q4_1),
        ));
        tensors.push((
            format!("{p}.attn_v.weight"),
            random((N_KV * hd, N_EMBD), s + 3, GgmlDType::Q8_0),
        ));
        tensors.push((
            format!("{p}.attn_output.weight"),
            random((N_EMBD, qd), s + 4, GgmlDType::Q4_1),
        ));
        tensors.push((
            format!("{p}.ffn_gate.weight"),
            random((N_FF, N_EMBD), s + 5, GgmlDType::Q8_0),
        ));
        tensors.push((
            format!("{p}.ffn_up.weight"),
            random((N_FF, N_EMBD), s + 6, GgmlDType::Q8_0),
        ));
        tensors.push((
            format!("{p}.ffn_down.weight"),
            random((N_EMBD, N_FF), s + 7, GgmlDType::Q4_1),
        ));
        tensors.push((format!("{p}.attn_norm.weight"), ones(N_EMBD)));
        tensors.push((format!("{p}.ffn_norm.weight"), ones(N_EMBD)));
        if arch == "qwen2" {
            for (name, n, seed) in [
                ("q", N_EMBD, 10),
                ("k", N_KV * hd, 11),
                ("v", N_KV * hd, 12),
            ] {
                let b = random((1, n), s + seed, GgmlDType::F32)
                    .dequantize(&Device::Cpu)
                    .unwrap();
                let b = QTensor::quantize(&b.flatten_all().unwrap(), GgmlDType::F32).unwrap();
                tensors.push((format!("{p}.attn_{name}.bias"), b));
            }
        }
        if arch == "qwen3" {
            tensors.push((format!("{p}.attn_q_norm.weight"), ones(hd)));
            tensors.push((format!("{p}.attn_k_norm.weight"), ones(hd)));
        }
    }
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &md_refs, &t_refs).unwrap();
    out.into_inner()
}

pub fn tiny_engine_of(arch: &str, pre: &str) -> Engine {
    Engine::from_reader(&mut Cursor::new(tiny_gguf_of(arch, pre))).unwrap()
}

pub fn tiny_engine() -> Engine {
    let bytes = tiny_gguf();
    Engine::from_reader(&mut Cursor::new(bytes)).unwrap()
}

/// Pieces of the tiny SentencePiece vocabulary (higher scores merge first): `▁`, letters, a few
/// words; everything else is spelled in byte tokens.
const SPM_WORDS: &[&str] = &[
    "he", "ll", "llo", "hello", "▁hello", "▁the", "Par", "Paris", "Ro", "Rome", "city", "days",
    "name", "▁user", "▁is",
];

/// Control and user-defined tokens of the tiny SentencePiece vocabulary: Phi-3's and Gemma's turn
/// markers (Gemma's stored as user-defined, as some Gemma files have them).
pub const SPM_SPECIAL: &[(&str, i32)] = &[
    ("<s>", 3),
    ("</s>", 3),
    ("<bos>", 3),
    ("<eos>", 3),
    ("<|endoftext|>", 3),
    ("<|system|>", 3),
    ("<|user|>", 3),
    ("<|assistant|>", 3),
    ("<|end|>", 3),
    ("<|tool|>", 4),
    ("<|/tool|>", 4),
    ("<start_of_turn>", 4),
    ("<end_of_turn>", 4),
];

/// The tiny SentencePiece vocabulary (`<unk>`, the specials, 256 byte tokens, the pieces): tokens,
/// scores and types.
pub fn spm_vocab() -> (Vec<String>, Vec<f32>, Vec<i32>) {
    let mut tokens = vec!["<unk>".to_owned()];
    let mut scores = vec![0.0];
    let mut types = vec![2];
    for (t, ty) in SPM_SPECIAL {
        tokens.push((*t).to_owned());
        scores.push(0.0);
        types.push(*ty);
    }
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        scores.push(0.0);
        types.push(6);
    }
    let letters = ('a'..='z').chain('A'..='Z').map(String::from);
    let pieces = std::iter::once("▁".to_owned())
        .chain(letters)
        .chain(SPM_WORDS.iter().map(|w| (*w).to_owned()));
    for (i, p) in pieces.enumerate() {
        tokens.push(p);
        scores.push(-(i as f32));
        types.push(1);
    }
    (tokens, scores, types)
}

/// A tiny model of `arch` (`phi3`: fused q|k|v and gate|up, its own output matrix; `gemma`,
/// `gemma2`, `gemma3`: tied output, and for the last two post-norms, Gemma 3 q/k norms too) with
/// the SentencePiece vocabulary and `template` as its chat template. Phi-3 files keep the space
/// prefix (the key absent: llama.cpp's default), the Gemma files turn it off as theirs do.
pub fn tiny_spm_gguf(arch: &str, template: &str) -> Vec<u8> {
    let (tokens, scores, types) = spm_vocab();
    let n_vocab = tokens.len();
    let id = |name: &str| tokens.iter().position(|t| t == name).unwrap() as u32;
    let gemma = arch.starts_with("gemma");
    let (bos, eos) = match gemma {
        true => (id("<bos>"), id("<eos>")),
        false => (id("<s>"), id("<|endoftext|>")),
    };
    let hd = N_EMBD / N_HEAD;
    let key = |k: &str| format!("{arch}.{k}");
    let mut md: Vec<(String, Value)> = vec![
        ("general.architecture".into(), Value::String(arch.into())),
        (key("block_count"), Value::U32(N_LAYER as u32)),
        (key("embedding_length"), Value::U32(N_EMBD as u32)),
        (key("feed_forward_length"), Value::U32(N_FF as u32)),
        (key("attention.head_count"), Value::U32(N_HEAD as u32)),
        (key("attention.head_count_kv"), Value::U32(N_KV as u32)),
        (key("context_length"), Value::U32(2048)),
        (key("attention.layer_norm_rms_epsilon"), Value::F32(1e-6)),
        (key("rope.freq_base"), Value::F32(10000.0)),
        ("tokenizer.ggml.model".into(), Value::String("llama".into())),
        (
            "tokenizer.ggml.tokens".into(),
            Value::Array(tokens.iter().map(|t| Value::String(t.clone())).collect()),
        ),
        (
            "tokenizer.ggml.scores".into(),
            Value::Array(scores.iter().map(|s| Value::F32(*s)).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            Value::Array(types.iter().map(|t| Value::I32(*t)).collect()),
        ),
        ("tokenizer.ggml.bos_token_id".into(), Value::U32(bos)),
        ("tokenizer.ggml.eos_token_id".into(), Value::U32(eos)),
        (
            "tokenizer.chat_template".into(),
            Value::String(template.into()),
        ),
    ];
    if gemma {
        md.push((key("attention.key_length"), Value::U32(hd as u32)));
        md.push((key("attention.sliding_window"), Value::U32(8)));
        md.push(("tokenizer.ggml.add_space_prefix".into(), Value::Bool(false)));
    }
    let mut tensors: Vec<(String, QTensor)> = vec![
        (
            "token_embd.weight".into(),
            random((n_vocab, N_EMBD), 1, GgmlDType::Q8_0),
        ),
        ("output_norm.weight".into(), ones(N_EMBD)),
    ];
    if !gemma {
        tensors.push((
            "output.weight".into(),
            random((n_vocab, N_EMBD), 2, GgmlDType::Q8_0),
        ));
    }
    let (qd, kvd) = (N_HEAD * hd, N_KV * hd);
    for l in 0..N_LAYER {
        let s = 100 * (l as u64 + 1);
        let p = format!("blk.{l}");
        let mut add = |name: &str, t: QTensor| tensors.push((format!("{p}.{name}"), t));
        if arch == "phi3" {
            add(
                "attn_qkv.weight",
                random((qd + 2 * kvd, N_EMBD), s + 1, GgmlDType::Q8_0),
            );
            add(
                "ffn_up.weight",
                random((2 * N_FF, N_EMBD), s + 6, GgmlDType::Q4_0),
            );
        } else {
            add(
                "attn_q.weight",
                random((qd, N_EMBD), s + 1, GgmlDType::Q8_0),
            );
            add(
                "attn_k.weight",
                random((kvd, N_EMBD), s + 2, GgmlDType::Q8_0),
            );
            add(
                "attn_v.weight",
                random((kvd, N_EMBD), s + 3, GgmlDType::Q8_0),
            );
            add(
                "ffn_gate.weight",
                random((N_FF, N_EMBD), s + 5, GgmlDType::Q8_0),
            );
            add(
                "ffn_up.weight",
                random((N_FF, N_EMBD), s + 6, GgmlDType::Q4_0),
            );
        }
        add(
            "attn_output.weight",
            random((N_EMBD, qd), s + 4, GgmlDType::Q8_0),
        );
        add(
            "ffn_down.weight",
            random((N_EMBD, N_FF), s + 7, GgmlDType::Q8_0),
        );
        add("attn_norm.weight", ones(N_EMBD));
        add("ffn_norm.weight", ones(N_EMBD));
        if arch == "gemma2" || arch == "gemma3" {
            add("post_attention_norm.weight", ones(N_EMBD));
            add("post_ffw_norm.weight", ones(N_EMBD));
        }
        if arch == "gemma3" {
            add("attn_q_norm.weight", ones(hd));
            add("attn_k_norm.weight", ones(hd));
        }
    }
    let md_refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let t_refs: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &md_refs, &t_refs).unwrap();
    out.into_inner()
}

/// The tool the tiny-model tests offer: an enum and a bounded integer, both required.
pub fn weather_tool() -> ToolSpec {
    ToolSpec::new(
        "get_weather",
        "Weather for a city.",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string", "enum": ["Paris", "Rome", "Oslo"]},
                "days": {"type": "integer", "minimum": 1, "maximum": 7}
            },
            "required": ["city", "days"]
        }),
    )
}
