//! The engine: weights, tokenizer, template and one KV cache, loaded once per model and shared.
//!
//! One generation runs at a time (the KV cache sits behind a mutex; a second request waits for the
//! first). The cache is kept between requests: a request whose prompt begins with tokens already
//! cached only feeds the rest, so the rounds of an agent conversation — each request a byte prefix
//! of the next — re-encode only what is new.

use std::fs::File;
use std::io::{BufReader, Read, Seek};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use candle_core::quantized::gguf_file::Content;
use llguidance::api::TopLevelGrammar;
use llguidance::{Matcher, ParserFactory};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use toktrie::{TokEnv, TokenId};

use crate::error::EmbeddedError;
use crate::model::{argmax, KvCache, Weights};
use crate::template::{ChatTemplate, TemplateMessage};
use crate::tokenizer::{TokEnvAdapter, Tokenizer};

/// How the engine is set up.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EngineOptions {
    /// CPU threads of a forward pass (default: the machine's logical CPUs).
    pub threads: Option<usize>,
    /// Convert Q5_x weights to 4-bit blocks instead of 8-bit (smaller, faster, slightly lossy);
    /// Q4_0/Q4_1 weights are used as stored either way.
    pub q4_0: bool,
}

/// Sampling settings. `temperature <= 0` is greedy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sampling {
    pub temperature: f32,
    pub top_p: f32,
    pub seed: u64,
    /// llama.cpp's repetition penalty over the last [`REPEAT_WINDOW`] generated tokens (1 = off;
    /// default 1.1, as llama.cpp): without it a small model's greedy output loops.
    pub repeat_penalty: f32,
}

/// How many recent tokens the repetition penalty looks at.
pub const REPEAT_WINDOW: usize = 64;

impl Default for Sampling {
    fn default() -> Self {
        Sampling {
            temperature: 0.0,
            top_p: 1.0,
            seed: 0,
            repeat_penalty: 1.1,
        }
    }
}

/// What the output may be.
#[derive(Clone, Debug, PartialEq)]
pub enum Constraint {
    /// Anything; ends at an end-of-turn token, a stop string or the token limit.
    Free,
    /// Output matching this llguidance (Lark) grammar.
    Grammar(String),
    /// A forced call: output matching `grammar`, which is steered to its end once only `reserve`
    /// tokens are left — from then on, where the grammar allows a token that closes (`}`, `]`,
    /// then `"`, then `,` when a required key must still come), one is taken — so the call is
    /// complete before the token limit.
    Call { grammar: String, reserve: usize },
}

/// One generation.
#[derive(Clone, Debug, PartialEq)]
pub struct Generation {
    /// The rendered prompt (control tokens written out, e.g. `<|im_start|>`).
    pub prompt: String,
    pub constraint: Constraint,
    pub stop: Vec<String>,
    pub max_tokens: usize,
    pub sampling: Sampling,
}

/// Why a generation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finish {
    /// An end-of-turn token, or the grammar was complete.
    EndOfTurn,
    /// A stop string was produced (it is not part of the text).
    StopString,
    /// The token limit.
    Length,
    /// The consumer went away.
    Cancelled,
}

/// What a generation did.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    pub prompt_tokens: usize,
    /// Prompt tokens whose keys and values were already cached.
    pub reused_tokens: usize,
    /// Tokens run through the model for the prompt (prompt_tokens - reused_tokens, at least 1).
    pub fed_tokens: usize,
    pub generated_tokens: usize,
    pub finish: Finish,
    pub prompt_time: Duration,
    pub generation_time: Duration,
    pub tokens: Vec<TokenId>,
}

/// A loaded model.
pub struct Engine {
    weights: Weights,
    tokenizer: Arc<Tokenizer>,
    template: ChatTemplate,
    factory: ParserFactory,
    closers: Closers,
    cache: Mutex<KvCache>,
    pub path: PathBuf,
    pub load_time: Duration,
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> EmbeddedError {
    EmbeddedError::Io {
        path: path.display().to_string(),
        reason: e.to_string(),
    }
}

impl Engine {
    /// Loads a GGUF file.
    pub fn load(path: &Path, options: &EngineOptions) -> Result<Engine, EmbeddedError> {
        let file = File::open(path).map_err(|e| io_err(path, e))?;
        let mut reader = BufReader::new(file);
        let target = if options.q4_0 {
            candle_core::quantized::GgmlDType::Q4_0
        } else {
            candle_core::quantized::GgmlDType::Q8_0
        };
        let mut engine = Engine::from_reader_as(&mut reader, target)?;
        if let Some(n) = options.threads.filter(|n| *n > 0) {
            engine.weights.set_threads(n);
        }
        engine.path = path.to_owned();
        Ok(engine)
    }

    /// Loads a GGUF from any reader (tests write one into memory).
    pub fn from_reader<R: Read + Seek>(reader: &mut R) -> Result<Engine, EmbeddedError> {
        Engine::from_reader_as(reader, candle_core::quantized::GgmlDType::Q8_0)
    }

    fn from_reader_as<R: Read + Seek>(
        reader: &mut R,
        target: candle_core::quantized::GgmlDType,
    ) -> Result<Engine, EmbeddedError> {
        let start = Instant::now();
        let content = Content::read(reader).map_err(|e| EmbeddedError::Format(e.to_string()))?;
        let tokenizer = Arc::new(Tokenizer::from_gguf(&content)?);
        let weights = Weights::load_as(&content, reader, target)?;
        if weights.vocab_size < tokenizer.vocab_size() {
            return Err(EmbeddedError::Format(format!(
                "the embeddings have {} rows for {} tokens",
                weights.vocab_size,
                tokenizer.vocab_size()
            )));
        }
        let template_src = content
            .metadata
            .get("tokenizer.chat_template")
            .and_then(|v| v.to_string().ok())
            .cloned();
        let name =
            |id: Option<TokenId>| id.map(|i| tokenizer_text(&content, i)).unwrap_or_default();
        let template =
            ChatTemplate::new(template_src, name(tokenizer.bos), name(Some(tokenizer.eos)));
        let env: TokEnv = Arc::new(TokEnvAdapter(Arc::clone(&tokenizer)));
        let mut factory =
            ParserFactory::new_simple(&env).map_err(|e| EmbeddedError::Grammar(e.to_string()))?;
        factory.quiet();
        let closers = Closers::of(&tokenizer);
        Ok(Engine {
            weights,
            tokenizer,
            template,
            factory,
            closers,
            cache: Mutex::new(KvCache::default()),
            path: PathBuf::new(),
            load_time: start.elapsed(),
        })
    }

    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    pub fn weights(&self) -> &Weights {
        &self.weights
    }

    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Renders messages with the model's chat template, ending with the assistant's turn opening.
    pub fn render(&self, messages: &[TemplateMessage]) -> String {
        self.template.render(messages)
    }

    fn lock(&self) -> Result<MutexGuard<'_, KvCache>, EmbeddedError> {
        self.cache
            .lock()
            .map_err(|_| EmbeddedError::Generation("the model state is poisoned".into()))
    }

    /// The tokens currently cached.
    pub fn cached_tokens(&self) -> usize {
        self.lock().map(|c| c.tokens().len()).unwrap_or(0)
    }

    /// Forgets the KV cache.
    pub fn reset(&self) {
        if let Ok(mut c) = self.lock() {
            c.clear();
        }
    }

    /// Compiles a grammar into a matcher.
    pub fn matcher(&self, grammar: &str) -> Result<Matcher, EmbeddedError> {
        let parser = self
            .factory
            .create_parser(TopLevelGrammar::from_lark(grammar.to_owned()))
            .map_err(|e| EmbeddedError::Grammar(e.to_string()))?;
        let matcher = Matcher::new(Ok(parser));
        if let Some(err) = matcher.get_error() {
            return Err(EmbeddedError::Grammar(err));
        }
        Ok(matcher)
    }

    /// Feeds the prompt, reusing the longest cached prefix; returns the last logits.
    fn prefill(
        &self,
        cache: &mut KvCache,
        prompt: &[TokenId],
    ) -> Result<(Vec<f32>, usize), EmbeddedError> {
        let common = cache
            .tokens()
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        // At least one token is fed, to get the logits.
        let keep = common.min(prompt.len().saturating_sub(1));
        cache.truncate(keep)?;
        let mut logits = Vec::new();
        for chunk in prompt[keep..].chunks(512) {
            logits = match self.weights.forward(chunk, cache) {
                Ok(l) => l,
                Err(e) => {
                    cache.clear();
                    return Err(e);
                }
            };
        }
        Ok((logits, keep))
    }

    /// Log-probability of `continuation` after `prompt`, and of the model's own greedy first token
    /// there. The cache is left holding the prompt.
    pub fn score(&self, prompt: &str, continuation: &str) -> Result<(f32, f32), EmbeddedError> {
        let prompt_ids = self.tokenizer.encode_prompt(prompt)?;
        let cont = self.tokenizer.encode_continuation(continuation)?;
        let mut cache = self.lock()?;
        let (mut logits, _) = self.prefill(&mut cache, &prompt_ids)?;
        let greedy = log_softmax_at(&logits, argmax(&logits));
        let mut total = 0.0;
        for (i, &tok) in cont.iter().enumerate() {
            total += log_softmax_at(&logits, tok as usize);
            if i + 1 < cont.len() {
                logits = self.weights.forward(&[tok], &mut cache)?;
            }
        }
        cache.truncate(prompt_ids.len())?;
        Ok((total, greedy))
    }

    /// Log-probability of `continuation` after each of `prompts`, computed on a scratch KV cache so
    /// the conversation's cache (reused across rounds) is left alone. Consecutive prompts share
    /// their common prefix. Holds the engine's lock: one forward pass at a time.
    pub fn score_detached(
        &self,
        prompts: &[String],
        continuation: &str,
    ) -> Result<Vec<f32>, EmbeddedError> {
        let cont = self.tokenizer.encode_continuation(continuation)?;
        let _busy = self.lock()?;
        let mut scratch = KvCache::default();
        let mut out = Vec::with_capacity(prompts.len());
        for prompt in prompts {
            let ids = self.tokenizer.encode_prompt(prompt)?;
            let (mut logits, _) = self.prefill(&mut scratch, &ids)?;
            let mut total = 0.0;
            for (i, &tok) in cont.iter().enumerate() {
                total += log_softmax_at(&logits, tok as usize);
                if i + 1 < cont.len() {
                    logits = self.weights.forward(&[tok], &mut scratch)?;
                }
            }
            scratch.truncate(ids.len())?;
            out.push(total);
        }
        Ok(out)
    }

    /// Runs one generation, handing text out as it is produced; `on_text` returning false stops it.
    pub fn generate(
        &self,
        generation: &Generation,
        on_text: &mut dyn FnMut(&str) -> bool,
    ) -> Result<Report, EmbeddedError> {
        let prompt = self.tokenizer.encode_prompt(&generation.prompt)?;
        let mut matcher = match &generation.constraint {
            Constraint::Free => None,
            Constraint::Grammar(g) | Constraint::Call { grammar: g, .. } => Some(self.matcher(g)?),
        };
        let reserve = match &generation.constraint {
            Constraint::Call { reserve, .. } => Some(*reserve),
            _ => None,
        };
        let mut cache = self.lock()?;
        let start = Instant::now();
        let (mut logits, reused) = self.prefill(&mut cache, &prompt)?;
        let prompt_time = start.elapsed();
        let start = Instant::now();
        let mut rng = StdRng::seed_from_u64(generation.sampling.seed);
        let mut stop = toolbridge_protocol::stop::StopScanner::new(generation.stop.iter().cloned());
        let mut utf8 = Utf8Carry::default();
        let mut tokens = Vec::new();
        let vocab = self.tokenizer.vocab_size();
        logits.truncate(vocab);
        let finish = loop {
            if tokens.len() >= generation.max_tokens {
                break Finish::Length;
            }
            if let Some(m) = matcher.as_mut() {
                if m.is_stopped() {
                    break Finish::EndOfTurn;
                }
                let mask = m
                    .compute_mask()
                    .map_err(|e| EmbeddedError::Grammar(e.to_string()))?;
                let mut masked = vec![f32::NEG_INFINITY; logits.len()];
                mask.iter_set_entries(|i| {
                    if let Some(v) = logits.get(i) {
                        masked[i] = *v;
                    }
                });
                if reserve.is_some_and(|r| generation.max_tokens.saturating_sub(tokens.len()) <= r)
                {
                    self.closers.steer(&mut masked);
                }
                logits = masked;
            }
            let penalty = generation.sampling.repeat_penalty;
            if penalty > 0.0 && penalty != 1.0 {
                let recent = &tokens[tokens.len().saturating_sub(REPEAT_WINDOW)..];
                let mut seen = std::collections::HashSet::new();
                for &t in recent {
                    if seen.insert(t) {
                        if let Some(v) = logits.get_mut(t as usize) {
                            *v = if *v > 0.0 { *v / penalty } else { *v * penalty };
                        }
                    }
                }
            }
            let token = sample(&logits, &generation.sampling, &mut rng);
            if self.tokenizer.end_of_turn.contains(&token) {
                break Finish::EndOfTurn;
            }
            tokens.push(token);
            if let Some(m) = matcher.as_mut() {
                m.consume_token(token)
                    .map_err(|e| EmbeddedError::Grammar(e.to_string()))?;
            }
            let text = utf8.push(self.tokenizer.token_bytes(token));
            let visible = stop.push(&text);
            if !visible.is_empty() && !on_text(&visible) {
                break Finish::Cancelled;
            }
            if stop.stopped() {
                break Finish::StopString;
            }
            if matcher.as_ref().is_some_and(|m| m.is_stopped()) {
                break Finish::EndOfTurn;
            }
            logits = self.weights.forward(&[token], &mut cache)?;
            logits.truncate(vocab);
        };
        if finish != Finish::Cancelled && finish != Finish::StopString {
            let rest = utf8.finish();
            let mut tail = stop.push(&rest);
            if !stop.stopped() {
                tail.push_str(&stop.finish());
            }
            if !tail.is_empty() {
                on_text(&tail);
            }
        }
        Ok(Report {
            prompt_tokens: prompt.len(),
            reused_tokens: reused,
            fed_tokens: prompt.len() - reused,
            generated_tokens: tokens.len(),
            finish,
            prompt_time,
            generation_time: start.elapsed(),
            tokens,
        })
    }
}

/// The tokens that lead a call to its end, by preference: those holding `<` (values never do, so
/// where the grammar allows one a closing tag starts there); made of `}` and `]` only; newlines
/// (a bare qwen3-coder value ends at one, and no JSON value holds one raw); those and `"` (a
/// string's end, or an empty string where a value must be written); of those, spaces and `,`
/// (the way on when a required key is still to come, or a number ends there).
struct Closers {
    markup: Vec<usize>,
    brackets: Vec<usize>,
    newlines: Vec<usize>,
    quotes: Vec<usize>,
    separators: Vec<usize>,
}

impl Closers {
    fn of(tokenizer: &Tokenizer) -> Closers {
        let mut c = Closers {
            markup: Vec::new(),
            brackets: Vec::new(),
            newlines: Vec::new(),
            quotes: Vec::new(),
            separators: Vec::new(),
        };
        for id in 0..tokenizer.vocab_size() {
            let bytes = tokenizer.token_bytes(id as TokenId);
            if bytes.is_empty() {
                continue;
            }
            if bytes.contains(&b'<') {
                c.markup.push(id);
            } else if bytes.iter().all(|b| *b == b'\n') {
                c.newlines.push(id);
            } else if !bytes.iter().all(|b| b"\"}], ".contains(b)) {
                continue;
            } else if bytes.contains(&b',') {
                c.separators.push(id);
            } else if bytes.contains(&b'"') {
                c.quotes.push(id);
            } else if bytes.iter().all(|b| b"}]".contains(b)) {
                c.brackets.push(id);
            }
        }
        c
    }

    /// Keeps only the allowed (finite) logits of the first tier of closers that has any; leaves
    /// `logits` alone when the grammar allows no closer here.
    fn steer(&self, logits: &mut [f32]) {
        for tier in [
            &self.markup,
            &self.brackets,
            &self.newlines,
            &self.quotes,
            &self.separators,
        ] {
            let allowed: Vec<(usize, f32)> = tier
                .iter()
                .filter_map(|&i| logits.get(i).copied().map(|v| (i, v)))
                .filter(|(_, v)| v.is_finite())
                .collect();
            if !allowed.is_empty() {
                logits.fill(f32::NEG_INFINITY);
                for (i, v) in allowed {
                    logits[i] = v;
                }
                return;
            }
        }
    }
}

fn tokenizer_text(content: &Content, id: TokenId) -> String {
    content
        .metadata
        .get("tokenizer.ggml.tokens")
        .and_then(|v| v.to_vec().ok())
        .and_then(|v| v.get(id as usize))
        .and_then(|v| v.to_string().ok())
        .cloned()
        .unwrap_or_default()
}

fn log_softmax_at(logits: &[f32], i: usize) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|v| (v - max).exp()).sum();
    logits
        .get(i)
        .map_or(f32::NEG_INFINITY, |v| v - max - sum.ln())
}

/// Greedy, or temperature + top-p (nucleus) sampling with a seeded generator. Masked logits are
/// `-inf` and never chosen.
pub fn sample(logits: &[f32], s: &Sampling, rng: &mut StdRng) -> TokenId {
    if s.temperature <= 0.0 {
        return argmax(logits) as TokenId;
    }
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut probs: Vec<(usize, f32)> = logits
        .iter()
        .enumerate()
        .filter(|(_, v)| v.is_finite())
        .map(|(i, v)| (i, ((v - max) / s.temperature).exp()))
        .collect();
    if probs.is_empty() {
        return argmax(logits) as TokenId;
    }
    probs.sort_by(|a, b| b.1.total_cmp(&a.1));
    let total: f32 = probs.iter().map(|p| p.1).sum();
    let top_p = if s.top_p > 0.0 && s.top_p < 1.0 {
        s.top_p
    } else {
        1.0
    };
    let mut kept = 0.0;
    let mut cut = probs.len();
    for (n, p) in probs.iter().enumerate() {
        kept += p.1 / total;
        if kept >= top_p {
            cut = n + 1;
            break;
        }
    }
    probs.truncate(cut);
    let total: f32 = probs.iter().map(|p| p.1).sum();
    let mut r = rng.random::<f32>() * total;
    for (i, p) in &probs {
        if r < *p {
            return *i as TokenId;
        }
        r -= p;
    }
    probs.last().map_or(0, |p| p.0 as TokenId)
}

/// Holds the bytes of a UTF-8 character split across tokens.
#[derive(Default)]
struct Utf8Carry(Vec<u8>);

impl Utf8Carry {
    fn push(&mut self, bytes: &[u8]) -> String {
        self.0.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.0) {
                Ok(s) => {
                    out.push_str(s);
                    self.0.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    out.push_str(&String::from_utf8_lossy(&self.0[..valid]));
                    match e.error_len() {
                        // An incomplete character at the end: hold it.
                        None => {
                            self.0.drain(..valid);
                            return out;
                        }
                        Some(n) => {
                            out.push('\u{FFFD}');
                            self.0.drain(..valid + n);
                        }
                    }
                }
            }
        }
    }

    fn finish(&mut self) -> String {
        let s = String::from_utf8_lossy(&self.0).into_owned();
        self.0.clear();
        s
    }
}

/// Process-wide cache of loaded engines, so every model built for one path shares one load.
pub fn shared(path: &Path, options: &EngineOptions) -> Result<Arc<Engine>, EmbeddedError> {
    static LOADED: Mutex<Vec<(PathBuf, std::sync::Weak<Engine>)>> = Mutex::new(Vec::new());
    let key = path.canonicalize().unwrap_or_else(|_| path.to_owned());
    let mut loaded = LOADED
        .lock()
        .map_err(|_| EmbeddedError::Generation("the model registry is poisoned".into()))?;
    loaded.retain(|(_, w)| w.strong_count() > 0);
    if let Some(engine) = loaded
        .iter()
        .find(|(p, _)| *p == key)
        .and_then(|(_, w)| w.upgrade())
    {
        return Ok(engine);
    }
    let engine = Arc::new(Engine::load(&key, options)?);
    loaded.push((key, Arc::downgrade(&engine)));
    Ok(engine)
}
