//! SentencePiece-style tokenization as llama.cpp does it for GGUFs whose `tokenizer.ggml.model` is
//! `llama` (Llama 1/2, Mistral v0.1, Phi-3, the Gemmas): a vocabulary of pieces with scores, `▁`
//! standing for a space, and byte tokens `<0xNN>` for what no piece covers.
//!
//! Encoding follows llama.cpp's `llm_tokenizer_spm`: whole special tokens are cut out of the text
//! first (longest first); each stretch of text between them gets a `▁` prefix when the file asks
//! for one (`tokenizer.ggml.add_space_prefix`) and it starts the text or follows a special token;
//! spaces become `▁`; the text is split into UTF-8 characters and adjacent pieces are merged,
//! always the pair whose merged piece scores highest (leftmost on a tie), while the merged piece is
//! in the vocabulary; a character left without a token of its own is spelled in byte tokens.
//!
//! Where we differ on purpose: merges never form a control, unknown, unused or byte token (so text
//! spelling `<0x41>` or a control token's name stays text; llama.cpp looks every token up), and
//! the turn markers the chat templates use count as control tokens whatever type the file gives
//! them (llama.cpp does the same for end-of-turn tokens only), so content cannot open a turn.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};

use toktrie::TokenId;

use crate::error::EmbeddedError;

/// GGUF token types (llama.cpp's `llama_token_type`; 1, normal, is the default case).
pub(super) const TYPE_UNKNOWN: i32 = 2;
pub(super) const TYPE_CONTROL: i32 = 3;
pub(super) const TYPE_USER_DEFINED: i32 = 4;
pub(super) const TYPE_UNUSED: i32 = 5;
pub(super) const TYPE_BYTE: i32 = 6;

/// SentencePiece's stand-in for a space.
const SPACE: char = '\u{2581}';

/// Turn markers of the chat templates: control tokens whatever type the file gives them (Gemma
/// files store `<start_of_turn>`/`<end_of_turn>` as user-defined or normal pieces).
pub(super) const TURN_MARKERS: &[&str] = &[
    "<start_of_turn>",
    "<end_of_turn>",
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|end|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|endoftext|>",
    "<|eot_id|>",
];

/// A SentencePiece vocabulary, ready to encode.
pub(super) struct Spm {
    /// Pieces merges may form (normal and user-defined tokens), with their scores.
    pieces: HashMap<String, (TokenId, f32)>,
    /// The token of each byte (`<0xNN>`, else the byte's own one-character piece).
    byte_tokens: Vec<Option<TokenId>>,
    unknown: Option<TokenId>,
    pub(super) add_space_prefix: bool,
    /// Tokens cut out of template text, longest first: control, user-defined and unknown ones.
    structure: Vec<(String, TokenId)>,
    /// Tokens cut out of content marked as plain text: user-defined ones that are not turn
    /// markers.
    plain: Vec<(String, TokenId)>,
}

/// A piece of the text being encoded: text still to tokenize, or a token already cut out.
enum Fragment {
    Text(String),
    Token(TokenId),
}

/// One symbol of the merge chain (llama.cpp's `llm_symbol`): a byte range of the text, linked to
/// its neighbours; merged-away symbols have `len` 0.
#[derive(Clone, Copy)]
struct Symbol {
    start: usize,
    len: usize,
    prev: Option<usize>,
    next: Option<usize>,
}

/// A candidate merge of two adjacent symbols.
struct Bigram {
    left: usize,
    right: usize,
    score: f32,
    /// The merged length, to notice that a symbol changed since the pair was queued.
    len: usize,
}

impl PartialEq for Bigram {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Bigram {}

impl PartialOrd for Bigram {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Bigram {
    /// The max-heap pops the highest score first, and on a tie the leftmost pair.
    fn cmp(&self, other: &Self) -> Ordering {
        self.score
            .total_cmp(&other.score)
            .then_with(|| other.left.cmp(&self.left))
    }
}

/// The byte a `<0xNN>` piece stands for.
pub(super) fn byte_piece(piece: &str) -> Option<u8> {
    let hex = piece.strip_prefix("<0x")?.strip_suffix('>')?;
    match hex.len() {
        2 => u8::from_str_radix(hex, 16).ok(),
        _ => None,
    }
}

/// What a token shows (llama.cpp's `token_to_piece` for SPM): a normal piece with `▁` back to
/// spaces, a byte token its byte, a user-defined token its text; the others nothing.
pub(super) fn token_bytes(piece: &str, kind: i32) -> Vec<u8> {
    match kind {
        TYPE_BYTE => match byte_piece(piece) {
            Some(b) => vec![b],
            None => piece.as_bytes().to_vec(),
        },
        TYPE_USER_DEFINED => piece.as_bytes().to_vec(),
        TYPE_CONTROL | TYPE_UNKNOWN | TYPE_UNUSED => Vec::new(),
        _ => piece.replace(SPACE, " ").into_bytes(),
    }
}

impl Spm {
    /// Builds the encoder from the vocabulary, its scores and its (effective) token types.
    pub(super) fn new(
        tokens: &[String],
        scores: &[f32],
        types: &[i32],
        add_space_prefix: bool,
    ) -> Result<Spm, EmbeddedError> {
        if scores.len() != tokens.len() || types.len() != tokens.len() {
            return Err(EmbeddedError::Format(format!(
                "{} tokens but {} scores and {} types",
                tokens.len(),
                scores.len(),
                types.len()
            )));
        }
        let mut pieces = HashMap::new();
        let mut byte_tokens = vec![None; 256];
        let mut single = vec![None; 256];
        let (mut structure, mut plain) = (Vec::new(), Vec::new());
        let mut unknown = None;
        for (i, ((piece, &score), &kind)) in tokens.iter().zip(scores).zip(types).enumerate() {
            let id = i as TokenId;
            match kind {
                TYPE_BYTE => {
                    if let Some(b) = byte_piece(piece) {
                        byte_tokens[usize::from(b)] = Some(id);
                    }
                }
                TYPE_CONTROL => structure.push((piece.clone(), id)),
                TYPE_UNKNOWN => {
                    unknown.get_or_insert(id);
                    structure.push((piece.clone(), id));
                }
                TYPE_USER_DEFINED => {
                    structure.push((piece.clone(), id));
                    plain.push((piece.clone(), id));
                    pieces.insert(piece.clone(), (id, score));
                }
                TYPE_UNUSED => {}
                _ => {
                    if let [b] = piece.as_bytes() {
                        single[usize::from(*b)] = Some(id);
                    }
                    pieces.insert(piece.clone(), (id, score));
                }
            }
        }
        // A byte without its `<0xNN>` token falls back to its own one-byte piece, as in llama.cpp.
        for (slot, fallback) in byte_tokens.iter_mut().zip(single) {
            if slot.is_none() {
                *slot = fallback;
            }
        }
        // Empty pieces would match everywhere; the longest token wins where two overlap.
        for list in [&mut structure, &mut plain] {
            list.retain(|(piece, _)| !piece.is_empty());
            list.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.1.cmp(&b.1)));
        }
        Ok(Spm {
            pieces,
            byte_tokens,
            unknown,
            add_space_prefix,
            structure,
            plain,
        })
    }

    /// Encodes `segments` (text, and whether it is template structure whose control tokens
    /// count) as one text; `starts` says whether it begins the text (a space prefix goes there).
    pub(super) fn encode(
        &self,
        segments: &[(&str, bool)],
        starts: bool,
    ) -> Result<Vec<TokenId>, EmbeddedError> {
        let mut fragments: Vec<Fragment> = Vec::new();
        for &(text, structure) in segments {
            let tokens = match structure {
                true => &self.structure,
                false => &self.plain,
            };
            for fragment in partition(text, tokens) {
                // Text meets the text before it across a mark: one stretch, as llama.cpp sees it.
                match (fragments.last_mut(), fragment) {
                    (Some(Fragment::Text(before)), Fragment::Text(t)) => before.push_str(&t),
                    (_, f) => fragments.push(f),
                }
            }
        }
        let mut out = Vec::new();
        let mut after_special = starts;
        for fragment in fragments {
            match fragment {
                Fragment::Token(id) => {
                    out.push(id);
                    after_special = true;
                }
                Fragment::Text(text) => {
                    let mut escaped = String::with_capacity(text.len() + 3);
                    if self.add_space_prefix && after_special {
                        escaped.push(SPACE);
                    }
                    escaped.extend(text.chars().map(|c| if c == ' ' { SPACE } else { c }));
                    self.tokenize(&escaped, &mut out)?;
                    after_special = false;
                }
            }
        }
        Ok(out)
    }

    /// The merges of llama.cpp's `llm_tokenizer_spm_session::tokenize` on one stretch of text.
    fn tokenize(&self, text: &str, out: &mut Vec<TokenId>) -> Result<(), EmbeddedError> {
        let mut symbols: Vec<Symbol> = Vec::new();
        for (start, c) in text.char_indices() {
            let i = symbols.len();
            symbols.push(Symbol {
                start,
                len: c.len_utf8(),
                prev: i.checked_sub(1),
                next: None,
            });
            if let Some(p) = i.checked_sub(1) {
                symbols[p].next = Some(i);
            }
        }
        if symbols.is_empty() {
            return Ok(());
        }
        let mut queue = BinaryHeap::new();
        let add = |left: Option<usize>,
                   right: Option<usize>,
                   symbols: &[Symbol],
                   queue: &mut BinaryHeap<Bigram>| {
            let (Some(left), Some(right)) = (left, right) else {
                return;
            };
            let (l, r) = (symbols[left], symbols[right]);
            let piece = &text[l.start..r.start + r.len];
            if let Some(&(_, score)) = self.pieces.get(piece) {
                queue.push(Bigram {
                    left,
                    right,
                    score,
                    len: piece.len(),
                });
            }
        };
        for i in 1..symbols.len() {
            add(Some(i - 1), Some(i), &symbols, &mut queue);
        }
        while let Some(b) = queue.pop() {
            let (l, r) = (symbols[b.left], symbols[b.right]);
            // A pair one of whose symbols has merged since it was queued is stale.
            if l.len == 0 || r.len == 0 || l.len + r.len != b.len {
                continue;
            }
            symbols[b.left].len += r.len;
            symbols[b.right].len = 0;
            symbols[b.left].next = r.next;
            if let Some(n) = r.next {
                symbols[n].prev = Some(b.left);
            }
            let prev = symbols[b.left].prev;
            let next = symbols[b.left].next;
            add(prev, Some(b.left), &symbols, &mut queue);
            add(Some(b.left), next, &symbols, &mut queue);
        }
        // Every merged piece is a token (a merge needs one), so what is left without a token is a
        // single character the vocabulary lacks: its bytes. (llama.cpp's `resegment` also splits
        // pieces back along their merges, which cannot happen when merging and looking up use the
        // same pieces.)
        let mut at = Some(0);
        while let Some(i) = at {
            let s = symbols[i];
            let piece = &text[s.start..s.start + s.len];
            match self.pieces.get(piece) {
                Some(&(id, _)) => out.push(id),
                None => {
                    for b in piece.bytes() {
                        let id = self.byte_tokens[usize::from(b)]
                            .or(self.unknown)
                            .ok_or_else(|| {
                                EmbeddedError::Tokenizer(format!(
                                    "no token for byte {b:#04x} and no unknown token"
                                ))
                            })?;
                        out.push(id);
                    }
                }
            }
            at = s.next;
        }
        Ok(())
    }
}

/// Cuts the `tokens` (longest first) out of `text`, as llama.cpp's `tokenizer_st_partition` does.
fn partition(text: &str, tokens: &[(String, TokenId)]) -> Vec<Fragment> {
    if text.is_empty() {
        return Vec::new();
    }
    let mut fragments = vec![Fragment::Text(text.to_owned())];
    for (piece, id) in tokens {
        if !text.contains(piece.as_str()) {
            continue;
        }
        let mut next = Vec::with_capacity(fragments.len());
        for fragment in fragments {
            match fragment {
                Fragment::Text(t) if t.contains(piece.as_str()) => {
                    let mut rest = t.as_str();
                    while let Some(at) = rest.find(piece.as_str()) {
                        if at > 0 {
                            next.push(Fragment::Text(rest[..at].to_owned()));
                        }
                        next.push(Fragment::Token(*id));
                        rest = &rest[at + piece.len()..];
                    }
                    if !rest.is_empty() {
                        next.push(Fragment::Text(rest.to_owned()));
                    }
                }
                other => next.push(other),
            }
        }
        fragments = next;
    }
    fragments
}
