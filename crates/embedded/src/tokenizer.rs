//! The tokenizer, built from the GGUF's own metadata (`tokenizer.ggml.*`): byte-level BPE for
//! `tokenizer.ggml.model = "gpt2"` (below), SentencePiece for `"llama"` (Phi-3, the Gemmas, Llama
//! 2: [`spm`]); another model is refused with an error naming it.
//!
//! GGUF files of the `gpt2` tokenizer family (SmolLM, Llama 3, Qwen, …) carry a byte-level BPE:
//! the vocabulary, the merges and a type per token (normal, control, user-defined, byte). The
//! pre-tokenizer is not stored as such, only named (`tokenizer.ggml.pre`), so it is chosen here from
//! that name: SmolLM's is "each digit on its own, then GPT-2 byte-level without a prefix space".
//! (candle's own GGUF helper ignores the name and uses plain GPT-2 settings, which splits digit runs
//! wrongly for SmolLM.) The BPE itself is the `tokenizers` crate's.
//!
//! The same vocabulary also gives the byte strings that `toktrie` needs for constrained decoding:
//! normal tokens map back through the byte-level alphabet; control tokens get toktrie's special
//! marker byte so a grammar can never produce one by spelling it out.

mod spm;
#[cfg(test)]
mod tests;

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use candle_core::quantized::gguf_file::{Content, Value};
use tokenizers::decoders::byte_level::ByteLevel as ByteLevelDecoder;
use tokenizers::models::bpe::BPE;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::digits::Digits;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::SplitDelimiterBehavior;
use tokenizers::{AddedToken, PreTokenizerWrapper};
use toktrie::{TokRxInfo, TokTrie, TokenId, TokenizerEnv};

use crate::error::EmbeddedError;

/// Qwen2's pre-tokenizer expression (from its tokenizer.json, as llama.cpp uses it).
const QWEN2_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
/// Llama 3's pre-tokenizer expression (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_LLAMA3`): Qwen2's, with
/// digits in runs of up to three instead of one by one.
const LLAMA3_SPLIT: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
use crate::template::{LITERAL_CLOSE, LITERAL_OPEN};

use spm::{TYPE_CONTROL, TYPE_UNKNOWN, TYPE_UNUSED, TYPE_USER_DEFINED};

/// The tokenizer models supported, as `tokenizer.ggml.model` names them.
pub const SUPPORTED_TOKENIZERS: &str =
    "`gpt2` (byte-level BPE), `llama` (SentencePiece with byte fallback)";

/// How text becomes tokens.
enum Encoder {
    Bpe {
        inner: Box<tokenizers::Tokenizer>,
        /// The same tokenizer with control tokens not recognized: for content marked as plain
        /// text.
        plain: Box<tokenizers::Tokenizer>,
    },
    Spm(spm::Spm),
}

/// A GGUF model's tokenizer.
pub struct Tokenizer {
    encoder: Encoder,
    /// Every token's bytes (control tokens: their text).
    bytes: Vec<Vec<u8>>,
    /// Tokens never shown (control tokens; for SentencePiece also unknown and unused ones).
    special: Vec<bool>,
    /// Whether a prompt starts with `bos` (SentencePiece files: `tokenizer.ggml.add_bos_token`,
    /// true when absent, as llama.cpp reads it; byte-level BPE files never, as before).
    add_bos: bool,
    ids: HashMap<String, TokenId>,
    pub bos: Option<TokenId>,
    pub eos: TokenId,
    /// Tokens that end a turn (`eos` and, when present, `<|im_end|>` / `<|eot_id|>` / `<|end|>`).
    pub end_of_turn: Vec<TokenId>,
    trie: Arc<TokTrie>,
}

fn md<'a>(content: &'a Content, key: &str) -> Result<&'a Value, EmbeddedError> {
    content
        .metadata
        .get(key)
        .ok_or_else(|| EmbeddedError::Format(format!("the GGUF has no `{key}`")))
}

fn md_u32(content: &Content, key: &str) -> Option<u32> {
    content.metadata.get(key).and_then(|v| v.to_u32().ok())
}

fn strings(value: &Value, key: &str) -> Result<Vec<String>, EmbeddedError> {
    let list = value
        .to_vec()
        .map_err(|_| EmbeddedError::Format(format!("`{key}` is not an array")))?;
    list.iter()
        .map(|v| {
            v.to_string()
                .cloned()
                .map_err(|_| EmbeddedError::Format(format!("`{key}` holds a non-string")))
        })
        .collect()
}

/// GPT-2's byte-to-character alphabet: printable bytes stand for themselves, the others are
/// shifted above U+0100.
fn byte_alphabet() -> HashMap<char, u8> {
    let mut printable: Vec<u32> = (u32::from(b'!')..=u32::from(b'~')).collect();
    printable.extend(0xA1..=0xAC);
    printable.extend(0xAE..=0xFF);
    let mut map = HashMap::new();
    let mut shifted = 0u32;
    for b in 0u32..=255 {
        let c = if printable.contains(&b) {
            b
        } else {
            shifted += 1;
            255 + shifted
        };
        if let (Some(c), Ok(b)) = (char::from_u32(c), u8::try_from(b)) {
            map.insert(c, b);
        }
    }
    map
}

impl Tokenizer {
    /// Builds the tokenizer from a GGUF's metadata.
    pub fn from_gguf(content: &Content) -> Result<Tokenizer, EmbeddedError> {
        let model = md(content, "tokenizer.ggml.model")?
            .to_string()
            .map_err(|_| EmbeddedError::Format("tokenizer.ggml.model is not a string".into()))?;
        if model != "gpt2" && model != "llama" {
            return Err(EmbeddedError::Unsupported(format!(
                "tokenizer `{model}` (supported: {SUPPORTED_TOKENIZERS})"
            )));
        }
        let tokens = strings(
            md(content, "tokenizer.ggml.tokens")?,
            "tokenizer.ggml.tokens",
        )?;
        let types: Vec<i32> = match content.metadata.get("tokenizer.ggml.token_type") {
            Some(v) => v
                .to_vec()
                .map_err(|_| EmbeddedError::Format("token_type is not an array".into()))?
                .iter()
                .map(|t| t.to_i32().unwrap_or(1))
                .collect(),
            None => vec![1; tokens.len()],
        };
        if types.len() != tokens.len() {
            return Err(EmbeddedError::Format(format!(
                "{} tokens but {} token types",
                tokens.len(),
                types.len()
            )));
        }
        let vocab: HashMap<String, u32> = tokens
            .iter()
            .enumerate()
            .map(|(i, t)| (t.clone(), i as u32))
            .collect();
        let (encoder, bytes, special, add_bos) = match model.as_str() {
            "llama" => sentencepiece(content, &tokens, types)?,
            _ => byte_level_bpe(content, &tokens, &types, &vocab)?,
        };
        let eos = md_u32(content, "tokenizer.ggml.eos_token_id").unwrap_or(0);
        let bos = md_u32(content, "tokenizer.ggml.bos_token_id");
        let mut end_of_turn = vec![eos];
        // Gemma's `<end_of_turn>` too, and the file's own end-of-turn token when it names one.
        let eot = md_u32(content, "tokenizer.ggml.eot_token_id")
            .and_then(|id| tokens.get(id as usize))
            .cloned();
        let names = [
            "<|im_end|>",
            "<|eot_id|>",
            "<|end|>",
            "<|endoftext|>",
            "<end_of_turn>",
        ];
        for name in names.iter().copied().chain(eot.as_deref()) {
            if let Some(&id) = vocab.get(name) {
                if !end_of_turn.contains(&id) {
                    end_of_turn.push(id);
                }
            }
        }
        let trie_words: Vec<Vec<u8>> = bytes
            .iter()
            .zip(&special)
            .map(|(b, s)| {
                if *s {
                    let mut w = vec![TokTrie::SPECIAL_TOKEN_MARKER];
                    w.extend_from_slice(b);
                    w
                } else {
                    b.clone()
                }
            })
            .collect();
        let info = TokRxInfo::new(tokens.len() as u32, eos);
        let trie = TokTrie::from(&info, &trie_words).with_eos_tokens(&end_of_turn);
        Ok(Tokenizer {
            encoder,
            bytes,
            special,
            add_bos,
            ids: vocab,
            bos,
            eos,
            end_of_turn,
            trie: Arc::new(trie),
        })
    }

    pub fn vocab_size(&self) -> usize {
        self.bytes.len()
    }

    /// Encodes text; control tokens written in it (`<|im_start|>`) become those tokens, except
    /// inside spans marked as plain text ([`crate::template::literal`]), which are encoded as
    /// text and lose their marks. A SentencePiece tokenizer treats the text as the start of a
    /// text (its space prefix, when the file asks for one).
    pub fn encode(&self, text: &str) -> Result<Vec<TokenId>, EmbeddedError> {
        self.encode_at(text, true)
    }

    /// [`Tokenizer::encode`] for text that continues other text (a scored continuation, a
    /// grammar's bytes): no SentencePiece space prefix; the same as `encode` for byte-level BPE.
    pub fn encode_continuation(&self, text: &str) -> Result<Vec<TokenId>, EmbeddedError> {
        self.encode_at(text, false)
    }

    /// [`Tokenizer::encode`] for a whole prompt: the BOS token first where the file asks for it
    /// (SentencePiece files, as llama.cpp does) and the template did not write it already.
    pub fn encode_prompt(&self, text: &str) -> Result<Vec<TokenId>, EmbeddedError> {
        let mut ids = self.encode(text)?;
        if let (true, Some(bos)) = (self.add_bos, self.bos) {
            if ids.first() != Some(&bos) {
                ids.insert(0, bos);
            }
        }
        Ok(ids)
    }

    fn encode_at(&self, text: &str, starts: bool) -> Result<Vec<TokenId>, EmbeddedError> {
        let segments = segments(text);
        match &self.encoder {
            Encoder::Bpe { inner, plain } => {
                let mut ids = Vec::new();
                for (piece, structure) in &segments {
                    let with = if *structure { inner } else { plain };
                    ids.extend(encode_with(with, piece)?);
                }
                Ok(ids)
            }
            Encoder::Spm(spm) => {
                let borrowed: Vec<(&str, bool)> =
                    segments.iter().map(|(t, s)| (t.as_ref(), *s)).collect();
                spm.encode(&borrowed, starts)
            }
        }
    }

    /// The id of a token written out in full (`<|im_end|>`).
    pub fn token_id(&self, token: &str) -> Option<TokenId> {
        self.ids.get(token).copied()
    }

    /// A token's bytes (a control token: empty, it is never shown).
    pub fn token_bytes(&self, id: TokenId) -> &[u8] {
        match self.special.get(id as usize) {
            Some(false) => self.bytes.get(id as usize).map_or(&[], |b| b.as_slice()),
            _ => &[],
        }
    }

    pub fn is_special(&self, id: TokenId) -> bool {
        self.special.get(id as usize).copied().unwrap_or(false)
    }

    /// Decodes tokens to text (control tokens are left out). A SentencePiece text that starts
    /// with the space its encoding prefixed loses it (llama.cpp's `detokenize`), so decoding what
    /// [`Tokenizer::encode`] made gives the text back.
    pub fn decode(&self, ids: &[TokenId]) -> String {
        let mut bytes: Vec<u8> = ids
            .iter()
            .flat_map(|&id| self.token_bytes(id).iter().copied())
            .collect();
        let prefixed = matches!(&self.encoder, Encoder::Spm(spm) if spm.add_space_prefix);
        let first = ids.first().map(|&id| self.token_bytes(id));
        if prefixed && first.is_some_and(|b| b.first() == Some(&b' ')) {
            bytes.remove(0);
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    pub fn trie(&self) -> &TokTrie {
        &self.trie
    }
}

/// What a tokenizer model builds: the encoder, every token's bytes, which tokens are never shown,
/// and whether prompts start with BOS.
type Parts = (Encoder, Vec<Vec<u8>>, Vec<bool>, bool);

/// The split expression of a pre-tokenizer of the Qwen2/Llama 3 kind, by the file's name for it.
fn split_of(pre: &str) -> &'static str {
    match pre {
        "qwen2" | "deepseek-r1-qwen" => QWEN2_SPLIT,
        _ => LLAMA3_SPLIT,
    }
}

/// The `gpt2` model: the `tokenizers` crate's BPE with the pre-tokenizer the file names.
fn byte_level_bpe(
    content: &Content,
    tokens: &[String],
    types: &[i32],
    vocab: &HashMap<String, u32>,
) -> Result<Parts, EmbeddedError> {
    let pre = content
        .metadata
        .get("tokenizer.ggml.pre")
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_default();
    let merges = strings(
        md(content, "tokenizer.ggml.merges")?,
        "tokenizer.ggml.merges",
    )?;
    let merges: Vec<(String, String)> = merges
        .iter()
        .filter_map(|m| m.split_once(' '))
        .map(|(a, b)| (a.to_owned(), b.to_owned()))
        .collect();
    let bpe = BPE::builder()
        .vocab_and_merges(
            vocab
                .iter()
                .map(|(k, v)| (k.clone(), *v))
                .collect::<tokenizers::models::bpe::Vocab>(),
            merges,
        )
        .build()
        .map_err(|e| EmbeddedError::Format(format!("cannot build the BPE: {e}")))?;
    let mut inner = tokenizers::Tokenizer::new(bpe);
    let byte_level = ByteLevel::new(false, true, true);
    // Which pre-tokenizers split digits one by one (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_*`).
    let pre_tokenizer: PreTokenizerWrapper = match pre.as_str() {
        "smollm" | "starcoder" | "refact" | "codeshell" => Sequence::new(vec![
            PreTokenizerWrapper::Digits(Digits::new(true)),
            PreTokenizerWrapper::ByteLevel(byte_level),
        ])
        .into(),
        // Qwen2's own split (llama.cpp's `LLAMA_VOCAB_PRE_TYPE_QWEN2`): single digits, letters
        // with one leading non-letter, punctuation runs; then bytes without the GPT-2 regex.
        // Llama 3's (`…_LLAMA3`, named `llama-bpe` in its files) is the same with digits in
        // threes.
        "qwen2" | "deepseek-r1-qwen" | "llama3" | "llama-v3" | "llama-bpe" | "falcon3"
        | "pixtral" => Sequence::new(vec![
            PreTokenizerWrapper::Split(
                Split::new(
                    SplitPattern::Regex(split_of(&pre).into()),
                    SplitDelimiterBehavior::Isolated,
                    false,
                )
                .map_err(|e| EmbeddedError::Tokenizer(e.to_string()))?,
            ),
            PreTokenizerWrapper::ByteLevel(ByteLevel::new(false, true, false)),
        ])
        .into(),
        _ => byte_level.into(),
    };
    inner.with_pre_tokenizer(Some(pre_tokenizer));
    inner.with_decoder(Some(ByteLevelDecoder::default()));
    let special_tokens: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter(|(_, t)| **t == TYPE_CONTROL)
        .map(|(s, _)| AddedToken::from(s.clone(), true))
        .collect();
    inner
        .add_special_tokens(special_tokens)
        .map_err(|e| EmbeddedError::Tokenizer(e.to_string()))?;
    let user_tokens: Vec<AddedToken> = tokens
        .iter()
        .zip(types)
        .filter(|(_, t)| **t == TYPE_USER_DEFINED)
        .map(|(s, _)| AddedToken::from(s.clone(), false))
        .collect();
    inner
        .add_tokens(user_tokens)
        .map_err(|e| EmbeddedError::Tokenizer(e.to_string()))?;
    let mut plain = inner.clone();
    plain.set_encode_special_tokens(true);

    let alphabet = byte_alphabet();
    let special: Vec<bool> = types.iter().map(|t| *t == TYPE_CONTROL).collect();
    let bytes: Vec<Vec<u8>> = tokens
        .iter()
        .zip(types)
        .map(|(t, ty)| match *ty {
            TYPE_CONTROL | TYPE_USER_DEFINED => t.as_bytes().to_vec(),
            _ => t
                .chars()
                .map(|c| alphabet.get(&c).copied())
                .collect::<Option<Vec<u8>>>()
                .unwrap_or_else(|| t.as_bytes().to_vec()),
        })
        .collect();
    let (inner, plain) = (Box::new(inner), Box::new(plain));
    Ok((Encoder::Bpe { inner, plain }, bytes, special, false))
}

/// A boolean of the tokenizer's metadata.
fn md_bool(content: &Content, key: &str) -> Option<bool> {
    content.metadata.get(key).and_then(|v| v.to_bool().ok())
}

/// The `llama` model: SentencePiece pieces with scores ([`spm`]).
fn sentencepiece(
    content: &Content,
    tokens: &[String],
    mut types: Vec<i32>,
) -> Result<Parts, EmbeddedError> {
    let key = "tokenizer.ggml.scores";
    let scores: Vec<f32> = md(content, key)?
        .to_vec()
        .map_err(|_| EmbeddedError::Format(format!("`{key}` is not an array")))?
        .iter()
        .map(|v| {
            v.to_f32()
                .map_err(|_| EmbeddedError::Format(format!("`{key}` holds a non-number")))
        })
        .collect::<Result<_, _>>()?;
    for (piece, kind) in tokens.iter().zip(types.iter_mut()) {
        if spm::TURN_MARKERS.contains(&piece.as_str()) {
            *kind = TYPE_CONTROL;
        }
    }
    let add_space_prefix = md_bool(content, "tokenizer.ggml.add_space_prefix").unwrap_or(true);
    let encoder = spm::Spm::new(tokens, &scores, &types, add_space_prefix)?;
    let bytes = tokens
        .iter()
        .zip(&types)
        .map(|(piece, kind)| match *kind {
            // Never shown, but the trie marks them with their text.
            TYPE_CONTROL | TYPE_UNKNOWN | TYPE_UNUSED => piece.as_bytes().to_vec(),
            _ => spm::token_bytes(piece, *kind),
        })
        .collect();
    let special = types
        .iter()
        .map(|t| matches!(*t, TYPE_CONTROL | TYPE_UNKNOWN | TYPE_UNUSED))
        .collect();
    let add_bos = md_bool(content, "tokenizer.ggml.add_bos_token").unwrap_or(true);
    Ok((Encoder::Spm(encoder), bytes, special, add_bos))
}

/// `text` cut at the marks of plain-text spans: each piece, and whether it is template structure
/// (control tokens recognized) rather than plain content. A stray close mark is dropped, an
/// unclosed span runs to the end, and empty pieces are left out.
fn segments(text: &str) -> Vec<(Cow<'_, str>, bool)> {
    if !text.contains([LITERAL_OPEN, LITERAL_CLOSE]) {
        return vec![(Cow::Borrowed(text), true)];
    }
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        // Structure up to the next open mark.
        let (structure, after) = rest.split_once(LITERAL_OPEN).unwrap_or((rest, ""));
        for piece in structure.split(LITERAL_CLOSE).filter(|p| !p.is_empty()) {
            out.push((Cow::Borrowed(piece), true));
        }
        // Plain text up to the close mark.
        let (content, after) = after.split_once(LITERAL_CLOSE).unwrap_or((after, ""));
        let content = content.replace(LITERAL_OPEN, "");
        if !content.is_empty() {
            out.push((Cow::Owned(content), false));
        }
        rest = after;
    }
    out
}

fn encode_with(t: &tokenizers::Tokenizer, text: &str) -> Result<Vec<TokenId>, EmbeddedError> {
    t.encode_fast(text, false)
        .map(|e| e.get_ids().to_vec())
        .map_err(|e| EmbeddedError::Tokenizer(e.to_string()))
}

/// The tokenizer as llguidance sees it.
pub struct TokEnvAdapter(pub Arc<Tokenizer>);

impl TokenizerEnv for TokEnvAdapter {
    fn tok_trie(&self) -> &TokTrie {
        &self.0.trie
    }

    fn tokenize_bytes(&self, s: &[u8]) -> Vec<TokenId> {
        match std::str::from_utf8(s) {
            Ok(text) => match self.0.encode_continuation(text) {
                Ok(ids) => ids,
                Err(_) => self.0.trie.greedy_tokenize(s),
            },
            Err(_) => self.0.trie.greedy_tokenize(s),
        }
    }
}
