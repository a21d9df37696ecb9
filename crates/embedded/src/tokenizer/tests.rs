//! The SentencePiece tokenizer on a small hand-made vocabulary whose merges are worked out by hand,
//! and the refusal of tokenizer models we do not have.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Cursor;

use candle_core::quantized::gguf_file::{self, Content, Value};

use super::Tokenizer;
use crate::template::literal;

/// Normal pieces and their scores (higher merges first).
const PIECES: &[(&str, f32)] = &[
    ("▁", -1.0),
    ("h", -2.0),
    ("e", -2.0),
    ("l", -2.0),
    ("o", -2.0),
    ("w", -2.0),
    ("r", -2.0),
    ("d", -2.0),
    ("a", -2.0),
    ("b", -2.0),
    ("c", -2.0),
    ("ll", -3.0),
    ("he", -4.0),
    ("llo", -5.0),
    ("hello", -6.0),
    ("▁hello", -7.0),
    ("▁w", -8.0),
    ("or", -9.0),
    ("aa", -2.5),
    ("ab", -5.0),
    ("bc", -1.5),
    // Would spell a control token and a byte token: merges never form those.
    ("<s", -1.0),
    ("<0", -1.0),
];

/// The vocabulary: `<unk>`, `<s>`, `</s>`, the 256 byte tokens, the pieces, a user-defined
/// `<br>`, and Gemma's turn markers stored as user-defined (as some Gemma files have them).
fn vocab() -> (Vec<String>, Vec<f32>, Vec<i32>) {
    let mut tokens = vec!["<unk>".to_owned(), "<s>".into(), "</s>".into()];
    let mut scores = vec![0.0, 0.0, 0.0];
    let mut types = vec![2, 3, 3];
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>"));
        scores.push(0.0);
        types.push(6);
    }
    for (p, s) in PIECES {
        tokens.push((*p).to_owned());
        scores.push(*s);
        types.push(1);
    }
    for p in ["<br>", "<start_of_turn>", "<end_of_turn>"] {
        tokens.push(p.to_owned());
        scores.push(0.0);
        types.push(4);
    }
    (tokens, scores, types)
}

fn gguf(model: &str, extra: &[(&str, Value)]) -> Vec<u8> {
    let (tokens, scores, types) = vocab();
    let mut md: Vec<(&str, Value)> = vec![
        ("tokenizer.ggml.model", Value::String(model.into())),
        (
            "tokenizer.ggml.tokens",
            Value::Array(tokens.into_iter().map(Value::String).collect()),
        ),
        (
            "tokenizer.ggml.scores",
            Value::Array(scores.into_iter().map(Value::F32).collect()),
        ),
        (
            "tokenizer.ggml.token_type",
            Value::Array(types.into_iter().map(Value::I32).collect()),
        ),
        ("tokenizer.ggml.bos_token_id", Value::U32(1)),
        ("tokenizer.ggml.eos_token_id", Value::U32(2)),
    ];
    for (k, v) in extra {
        md.retain(|(key, _)| key != k);
        md.push((k, v.clone()));
    }
    let refs: Vec<(&str, &Value)> = md.iter().map(|(k, v)| (*k, v)).collect();
    let mut out = Cursor::new(Vec::new());
    gguf_file::write(&mut out, &refs, &[]).unwrap();
    out.into_inner()
}

fn load(bytes: &[u8]) -> Result<Tokenizer, crate::error::EmbeddedError> {
    let content = Content::read(&mut Cursor::new(bytes)).unwrap();
    Tokenizer::from_gguf(&content)
}

fn spm() -> Tokenizer {
    load(&gguf("llama", &[])).unwrap()
}

/// The pieces of `ids`, as the vocabulary spells them.
fn pieces(ids: &[u32]) -> Vec<String> {
    let (tokens, _, _) = vocab();
    ids.iter().map(|&i| tokens[i as usize].clone()).collect()
}

#[test]
fn merges_follow_the_highest_scoring_piece() {
    let tok = spm();
    // "▁hello▁world": ll, he, llo, hello, ▁hello, ▁w, or in score order (worked out by hand).
    let ids = tok.encode("hello world").unwrap();
    assert_eq!(pieces(&ids), ["▁hello", "▁w", "or", "l", "d"]);
    // The higher-scoring pair wins over the leftmost one ...
    assert_eq!(
        pieces(&tok.encode_continuation("abc").unwrap()),
        ["a", "bc"]
    );
    // ... and of two equal pairs the leftmost merges first.
    assert_eq!(
        pieces(&tok.encode_continuation("aaa").unwrap()),
        ["aa", "a"]
    );
}

#[test]
fn characters_without_a_piece_fall_back_to_bytes() {
    let tok = spm();
    let ids = tok.encode_continuation("é🦀\n").unwrap();
    assert_eq!(
        pieces(&ids),
        ["<0xC3>", "<0xA9>", "<0xF0>", "<0x9F>", "<0xA6>", "<0x80>", "<0x0A>"]
    );
    // A byte token's bytes are its byte: the emoji comes back whole from its four tokens.
    let emoji: Vec<u8> = ids[2..6]
        .iter()
        .flat_map(|&i| tok.token_bytes(i).to_vec())
        .collect();
    assert_eq!(emoji, "🦀".as_bytes());
    // Content spelling a byte token or a control token stays text (pieces `<0` and `<s` exist,
    // but no merge forms `<0x41>` or `<s>`).
    let ids = tok.encode_continuation(&literal("<0x41><s>")).unwrap();
    assert!(!ids.contains(&1), "{:?}", pieces(&ids));
    assert_eq!(tok.decode(&ids), "<0x41><s>");
}

#[test]
fn decoding_gives_the_text_back() {
    let tok = spm();
    for text in [
        "hello world",
        "  leading spaces\n\ttabs\r\n",
        "trailing space ",
        "Paris \"name\": é à ü — 漢字 🦀🦀",
        "line one\nline two\n\n",
        "spelled <0x41> and <s",
        "",
    ] {
        let ids = tok.encode(text).unwrap();
        assert_eq!(tok.decode(&ids), text, "{:?}", pieces(&ids));
    }
    // The space prefix: "hello" at the start of a text is "▁hello", after other text "hello".
    assert_eq!(pieces(&tok.encode("hello").unwrap()), ["▁hello"]);
    assert_eq!(
        pieces(&tok.encode_continuation("hello").unwrap()),
        ["hello"]
    );
    // A file without the prefix (the Gemmas) encodes the text as written.
    let gemma = load(&gguf(
        "llama",
        &[("tokenizer.ggml.add_space_prefix", Value::Bool(false))],
    ))
    .unwrap();
    assert_eq!(pieces(&gemma.encode("hello").unwrap()), ["hello"]);
    assert_eq!(gemma.decode(&gemma.encode(" hello").unwrap()), " hello");
}

#[test]
fn special_tokens_are_whole_tokens_in_structure_only() {
    let tok = spm();
    // Control tokens in template text; the text after one gets the space prefix, as in llama.cpp.
    let ids = tok.encode("<s>hello</s>").unwrap();
    assert_eq!(pieces(&ids), ["<s>", "▁hello", "</s>"]);
    assert!(tok.is_special(1) && tok.is_special(2));
    assert_eq!(tok.decode(&ids), " hello");
    // Turn markers count as control whatever the file says, and are never shown.
    let turn = tok.token_id("<start_of_turn>").unwrap();
    let end = tok.token_id("<end_of_turn>").unwrap();
    assert!(tok.is_special(turn) && tok.is_special(end));
    assert!(tok.end_of_turn.contains(&end));
    // In content marked as plain text they are text; a user-defined token is matched anyway.
    let text = format!(
        "<start_of_turn>user\n{}<end_of_turn>",
        literal("<end_of_turn><s> <br>")
    );
    let ids = tok.encode(&text).unwrap();
    assert_eq!(ids[0], turn);
    assert_eq!(*ids.last().unwrap(), end);
    let inner = &ids[1..ids.len() - 1];
    assert!(
        !inner.contains(&end) && !inner.contains(&1),
        "{:?}",
        pieces(inner)
    );
    assert!(inner.contains(&tok.token_id("<br>").unwrap()));
    // (Decoding strips the prefixed space of the first token.)
    assert_eq!(tok.decode(inner), "user\n<end_of_turn><s> <br>");
    // The plain span continues the text before it: one stretch, no second space prefix.
    let ids = tok.encode(&format!("he{}", literal("llo"))).unwrap();
    assert_eq!(pieces(&ids), ["▁hello"]);
}

#[test]
fn prompts_start_with_bos_once_when_the_file_asks() {
    let tok = spm();
    assert_eq!(
        pieces(&tok.encode_prompt("hello").unwrap()),
        ["<s>", "▁hello"]
    );
    assert_eq!(
        pieces(&tok.encode_prompt("<s>hello").unwrap()),
        ["<s>", "▁hello"]
    );
    let no_bos = load(&gguf(
        "llama",
        &[("tokenizer.ggml.add_bos_token", Value::Bool(false))],
    ))
    .unwrap();
    assert_eq!(pieces(&no_bos.encode_prompt("hello").unwrap()), ["▁hello"]);
}

#[test]
fn unknown_models_and_malformed_vocabularies_are_named() {
    let err = load(&gguf("bert", &[])).err().unwrap().to_string();
    assert!(err.contains("`bert`"), "{err}");
    assert!(err.contains(super::SUPPORTED_TOKENIZERS), "{err}");
    let short = gguf(
        "llama",
        &[("tokenizer.ggml.scores", Value::Array(vec![Value::F32(0.0)]))],
    );
    let err = load(&short).err().unwrap().to_string();
    assert!(err.contains("scores"), "{err}");
    let strings = gguf(
        "llama",
        &[(
            "tokenizer.ggml.scores",
            Value::Array(vec![Value::String("x".into())]),
        )],
    );
    let err = load(&strings).err().unwrap().to_string();
    assert!(err.contains("tokenizer.ggml.scores"), "{err}");
}
