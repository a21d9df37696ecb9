//! The per-conversation state: keys and values of every cached position, and the scratch
//! buffers of the forward pass (kept here so that a decoding step allocates nothing).

use std::sync::{Mutex, PoisonError, RwLock};

use super::matrix::Activation;
use crate::error::EmbeddedError;

/// Positions the key/value buffers grow by: a reallocation copies the cache, so it grows in steps
/// rather than to the model's whole context up front (8192 positions are ~370 MiB for the default
/// model; a conversation uses a few hundred).
const GROW: usize = 256;

/// Keys and values: per layer and key/value head, `positions × head_dim` (position major, so
/// appending a position and cutting back to a prefix are cheap).
#[derive(Default)]
pub(crate) struct KvStore {
    /// `[layer * n_kv_head + head]`.
    pub keys: Vec<Vec<f32>>,
    pub values: Vec<Vec<f32>>,
    pub head_dim: usize,
}

impl KvStore {
    /// Shapes the store for a model (dropping what it holds if the shape differs).
    pub fn shape(&mut self, heads: usize, head_dim: usize) {
        if self.keys.len() != heads || self.head_dim != head_dim {
            self.keys = vec![Vec::new(); heads];
            self.values = vec![Vec::new(); heads];
            self.head_dim = head_dim;
        }
    }

    /// Keeps the first `n` positions.
    pub fn truncate(&mut self, n: usize) {
        let len = n * self.head_dim;
        for v in self.keys.iter_mut().chain(self.values.iter_mut()) {
            v.truncate(len);
        }
    }

    /// Makes room for `n` positions in all heads.
    pub fn reserve(&mut self, n: usize) {
        let want = n.div_ceil(GROW) * GROW * self.head_dim;
        for v in self.keys.iter_mut().chain(self.values.iter_mut()) {
            if v.capacity() < n * self.head_dim {
                v.reserve_exact(want - v.len());
            }
        }
    }
}

/// One thread's results of a phase, gathered by thread 0.
#[derive(Default)]
pub(crate) struct ThreadOut {
    pub out: Vec<f32>,
    /// A second product (the up projection beside the gate).
    pub aux: Vec<f32>,
    pub scores: Vec<f32>,
}

/// Buffers read by every thread of a forward pass (written by thread 0 between phases).
#[derive(Default)]
pub(crate) struct Shared {
    pub act: RwLock<Activation>,
    /// Queries after rotation, `m × n_head × head_dim`.
    pub q: RwLock<Vec<f32>>,
    pub kv: RwLock<KvStore>,
    pub outs: Vec<Mutex<ThreadOut>>,
}

/// Buffers only thread 0 touches.
#[derive(Default)]
pub(crate) struct Local {
    /// The residual stream, `m × n_embd`.
    pub x: Vec<f32>,
    /// A gathered product, `m × rows`.
    pub full: Vec<f32>,
    pub cos: Vec<f32>,
    pub sin: Vec<f32>,
    pub logits: Vec<f32>,
}

/// The per-conversation state: the KV cache and the tokens it holds.
#[derive(Default)]
pub struct KvCache {
    pub(crate) tokens: Vec<u32>,
    pub(crate) shared: Shared,
    pub(crate) local: Local,
}

pub(crate) fn poisoned<T>(_: PoisonError<T>) -> EmbeddedError {
    EmbeddedError::Generation("a model thread failed while holding the state".into())
}

impl KvCache {
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
        self.shared.kv.get_mut().map_err(poisoned)?.truncate(n);
        Ok(())
    }

    /// Forgets everything cached (the buffers are kept for the next conversation).
    pub fn clear(&mut self) {
        self.tokens.clear();
        self.shared
            .kv
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .truncate(0);
    }
}
