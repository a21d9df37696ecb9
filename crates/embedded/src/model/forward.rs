//! The forward pass: every thread runs [`program`] over its share of each matrix product and of
//! the attention heads; thread 0 alone does the short serial steps in between (normalization,
//! rotation, the KV cache append, residual sums), so each layer is ten phases separated by
//! barriers.

use std::sync::{Mutex, MutexGuard};

use super::cache::{poisoned, KvCache, Local, Shared, ThreadOut};
use super::matrix::{Matrix, Stack};
use super::ops::{
    add, attend, geglu, rms_norm, rms_norm_in_place, rope, rope_halves, softcap, swiglu, Scores,
};
use super::team::{self, share, Barrier};
use super::{Activation, Rotation};
use super::{Layer, Weights};
use crate::error::EmbeddedError;

/// What every thread of one forward pass reads.
struct Step<'a> {
    w: &'a Weights,
    sh: &'a Shared,
    /// Positions fed, and how many were cached before.
    m: usize,
    pos: usize,
    threads: usize,
}

pub(super) fn forward(
    w: &Weights,
    tokens: &[u32],
    cache: &mut KvCache,
) -> Result<Vec<f32>, EmbeddedError> {
    let hp = &w.hparams;
    let m = tokens.len();
    let pos = cache.tokens.len();
    if m == 0 {
        return Err(EmbeddedError::Generation("nothing to feed".into()));
    }
    if pos + m > hp.context_length {
        return Err(EmbeddedError::ContextFull {
            needed: pos + m,
            context: hp.context_length,
        });
    }
    if let Some(&t) = tokens.iter().find(|&&t| t as usize >= w.vocab_size) {
        return Err(EmbeddedError::Generation(format!(
            "token {t} is outside the vocabulary"
        )));
    }
    // Past a few dozen threads the shares are too small to pay for the barriers.
    let threads = w.threads.clamp(1, 64);
    let KvCache {
        tokens: cached,
        shared,
        local,
    } = cache;
    {
        let kv = shared.kv.get_mut().map_err(poisoned)?;
        kv.shape(hp.n_layer * hp.n_kv_head, hp.head_dim);
        // A failed step may have appended to some layers: the tokens are the truth.
        kv.truncate(pos);
        kv.reserve(pos + m);
    }
    shared
        .outs
        .resize_with(threads, || Mutex::new(Default::default()));
    // The embeddings of the fed tokens start the residual stream.
    let e = hp.n_embd;
    local.x.resize(m * e, 0.0);
    for (row, &t) in local.x.chunks_exact_mut(e).zip(tokens) {
        w.embeddings.row_into(t as usize, row);
        if hp.embed_scale != 1.0 {
            row.iter_mut().for_each(|v| *v *= hp.embed_scale);
        }
    }
    // Rotation angles of the fed positions, per table, as candle-transformers computes them;
    // Phi-3's long-context factor scales the rotation's magnitude. Only the first `rope_dim`
    // dimensions of a head turn.
    let half = hp.rope_dim / 2;
    local.cos.clear();
    local.sin.clear();
    let mag = hp.rope_attn_factor;
    for theta in &w.thetas {
        for p in pos..pos + m {
            for &th in theta {
                let a = p as f32 * th;
                local.cos.push(a.cos() * mag);
                local.sin.push(a.sin() * mag);
            }
        }
    }
    debug_assert_eq!(local.cos.len(), w.thetas.len() * m * half);
    let step = Step {
        w,
        sh: shared,
        m,
        pos,
        threads,
    };
    team::run(threads, local, |t, main, barrier| {
        program(&step, t, main, barrier)
    })?;
    cached.extend_from_slice(tokens);
    Ok(local.logits.clone())
}

/// The whole pass as seen by thread `t`; `main` is `Some` on thread 0.
fn program(
    s: &Step,
    t: usize,
    mut main: Option<&mut Local>,
    barrier: &Barrier,
) -> Result<(), EmbeddedError> {
    let hp = &s.w.hparams;
    let eps = hp.rms_eps as f32;
    let (e, m) = (hp.n_embd, s.m);
    let qd = hp.n_head * hp.head_dim;
    for (li, layer) in s.w.layers.iter().enumerate() {
        if let Some(l) = main.as_deref_mut() {
            s.set_act(e, |f| norm_rows(&l.x, &layer.attn_norm, eps, e, f))?;
        }
        barrier.wait()?;
        let qkv = [&layer.wq, &layer.wk, &layer.wv];
        s.matmul(t, &qkv)?;
        barrier.wait()?;
        if let Some(l) = main.as_deref_mut() {
            s.gather(&qkv, &mut l.full)?;
            if !layer.qkv_bias.is_empty() {
                for row in l.full.chunks_exact_mut(layer.qkv_bias.len()) {
                    add(row, &layer.qkv_bias);
                }
            }
            s.rotate_and_cache(li, layer, l)?;
        }
        barrier.wait()?;
        s.attention(t, li)?;
        barrier.wait()?;
        if main.is_some() {
            s.set_act(qd, |f| s.gather_attention(f))?;
        }
        barrier.wait()?;
        s.matmul(t, &[&layer.wo])?;
        barrier.wait()?;
        if let Some(l) = main.as_deref_mut() {
            s.gather(&[&layer.wo], &mut l.full)?;
            post_norm(&mut l.full, &layer.post_attn_norm, eps, e);
            add(&mut l.x, &l.full);
            s.set_act(e, |f| norm_rows(&l.x, &layer.ffn_norm, eps, e, f))?;
        }
        barrier.wait()?;
        s.gated(t, &layer.w_gate, &layer.w_up)?;
        barrier.wait()?;
        if main.is_some() {
            s.set_act(layer.w_up.rows, |f| s.gather(&[&layer.w_up], f))?;
        }
        barrier.wait()?;
        s.matmul(t, &[&layer.w_down])?;
        barrier.wait()?;
        if let Some(l) = main.as_deref_mut() {
            s.gather(&[&layer.w_down], &mut l.full)?;
            post_norm(&mut l.full, &layer.post_ffn_norm, eps, e);
            add(&mut l.x, &l.full);
        }
    }
    // Only the last position's logits are wanted.
    if let Some(l) = main.as_deref_mut() {
        let last = &l.x[(m - 1) * e..];
        s.set_act_rows(1, e, |f| norm_rows(last, &s.w.out_norm, eps, e, f))?;
    }
    barrier.wait()?;
    let output = s.w.output.as_ref().unwrap_or(&s.w.embeddings);
    s.matmul_rows(t, &[output], 1)?;
    barrier.wait()?;
    if let Some(l) = main {
        s.gather_rows(&[output], 1, &mut l.logits)?;
        if let Some(cap) = hp.final_softcap {
            l.logits.iter_mut().for_each(|v| *v = softcap(*v, cap));
        }
    }
    Ok(())
}

/// Gemma 2/3's norm of a block's output rows before they join the stream (empty: none).
fn post_norm(rows: &mut [f32], weight: &[f32], eps: f32, e: usize) {
    if weight.is_empty() {
        return;
    }
    for row in rows.chunks_exact_mut(e) {
        rms_norm_in_place(row, weight, eps);
    }
}

fn norm_rows(
    x: &[f32],
    weight: &[f32],
    eps: f32,
    e: usize,
    out: &mut Vec<f32>,
) -> Result<(), EmbeddedError> {
    out.resize(x.len(), 0.0);
    for (xr, or) in x.chunks_exact(e).zip(out.chunks_exact_mut(e)) {
        rms_norm(xr, weight, eps, or);
    }
    Ok(())
}

impl Step<'_> {
    /// Fills the activation (`m` rows of `cols`) with `fill` and quantizes it.
    fn set_act(
        &self,
        cols: usize,
        fill: impl FnOnce(&mut Vec<f32>) -> Result<(), EmbeddedError>,
    ) -> Result<(), EmbeddedError> {
        self.set_act_rows(self.m, cols, fill)
    }

    fn set_act_rows(
        &self,
        rows: usize,
        cols: usize,
        fill: impl FnOnce(&mut Vec<f32>) -> Result<(), EmbeddedError>,
    ) -> Result<(), EmbeddedError> {
        let mut act = self.sh.act.write().map_err(poisoned)?;
        let act = &mut *act;
        act.rows = rows;
        act.cols = cols;
        fill(&mut act.f)?;
        if act.f.len() != rows * cols {
            return Err(EmbeddedError::Generation(format!(
                "internal: activation of {} values for {rows}×{cols}",
                act.f.len()
            )));
        }
        act.quantize();
        Ok(())
    }

    /// This thread's rows of the stacked matrices `mats` times every activation row, into its
    /// output as `m × rows` (row-major by position).
    fn matmul(&self, t: usize, mats: &[&Matrix]) -> Result<(), EmbeddedError> {
        self.matmul_rows(t, mats, self.m)
    }

    fn matmul_rows(&self, t: usize, mats: &[&Matrix], m: usize) -> Result<(), EmbeddedError> {
        let stack = Stack(mats);
        let mine = share(stack.groups(), self.threads, t);
        let width = stack.rows_of(mine.clone()).len();
        let act = self.sh.act.read().map_err(poisoned)?;
        let mut out = self.out(t)?;
        out.out.resize(m * width, 0.0);
        stack.product(mine, &act, m, &mut out.out);
        Ok(())
    }

    /// SiLU(gate) · up for this thread's rows.
    fn gated(&self, t: usize, gate: &Matrix, up: &Matrix) -> Result<(), EmbeddedError> {
        let (gates, ups) = ([gate], [up]);
        let (gates, ups) = (Stack(&gates), Stack(&ups));
        let mine = share(ups.groups(), self.threads, t);
        let width = ups.rows_of(mine.clone()).len();
        let act = self.sh.act.read().map_err(poisoned)?;
        let mut guard = self.out(t)?;
        let buf = &mut *guard;
        buf.out.resize(self.m * width, 0.0);
        buf.aux.resize(self.m * width, 0.0);
        gates.product(mine.clone(), &act, self.m, &mut buf.out);
        ups.product(mine, &act, self.m, &mut buf.aux);
        match self.w.hparams.activation {
            Activation::Silu => {
                for (g, u) in buf.out.iter_mut().zip(&buf.aux) {
                    *g = swiglu(*g, *u);
                }
            }
            Activation::GeluTanh => {
                for (g, u) in buf.out.iter_mut().zip(&buf.aux) {
                    *g = geglu(*g, *u);
                }
            }
        }
        Ok(())
    }

    fn out(&self, t: usize) -> Result<MutexGuard<'_, ThreadOut>, EmbeddedError> {
        self.sh
            .outs
            .get(t)
            .ok_or_else(|| EmbeddedError::Generation("internal: no buffer for a thread".into()))?
            .lock()
            .map_err(poisoned)
    }

    /// Assembles the threads' shares of the product of `mats` into `full` (`m × rows`).
    fn gather(&self, mats: &[&Matrix], full: &mut Vec<f32>) -> Result<(), EmbeddedError> {
        self.gather_rows(mats, self.m, full)
    }

    fn gather_rows(
        &self,
        mats: &[&Matrix],
        m: usize,
        full: &mut Vec<f32>,
    ) -> Result<(), EmbeddedError> {
        let stack = Stack(mats);
        let total = stack.rows();
        full.resize(m * total, 0.0);
        for t in 0..self.threads {
            let mine = stack.rows_of(share(stack.groups(), self.threads, t));
            let width = mine.len();
            if width == 0 {
                continue;
            }
            let out = self.out(t)?;
            for (p, part) in out.out.chunks_exact(width).take(m).enumerate() {
                full[p * total + mine.start..p * total + mine.end].copy_from_slice(part);
            }
        }
        Ok(())
    }

    /// Splits the gathered q|k|v rows, normalizes each q and k head where the model has those norms
    /// (Qwen3, Gemma 3), rotates q and k (their first `rope_dim` dimensions), stores q for the
    /// attention phase and appends k and v to the cache.
    fn rotate_and_cache(
        &self,
        li: usize,
        layer: &Layer,
        l: &mut Local,
    ) -> Result<(), EmbeddedError> {
        let hp = &self.w.hparams;
        let hd = hp.head_dim;
        let half = hp.rope_dim / 2;
        let (qd, kvd) = (hp.n_head * hd, hp.n_kv_head * hd);
        let width = qd + 2 * kvd;
        let mut q = self.sh.q.write().map_err(poisoned)?;
        let mut kv = self.sh.kv.write().map_err(poisoned)?;
        let kv = &mut *kv;
        q.resize(self.m * qd, 0.0);
        for p in 0..self.m {
            let row = &mut l.full[p * width..(p + 1) * width];
            let at = (layer.rope * self.m + p) * half;
            let (cos, sin) = (&l.cos[at..at + half], &l.sin[at..at + half]);
            for (n, head) in row[..qd + kvd].chunks_exact_mut(hd).enumerate() {
                if hp.qk_norm {
                    let weight = if n < hp.n_head {
                        &layer.q_norm
                    } else {
                        &layer.k_norm
                    };
                    rms_norm_in_place(head, weight, hp.rms_eps as f32);
                }
                let turned = &mut head[..hp.rope_dim];
                match hp.rotation {
                    Rotation::Interleaved => rope(turned, cos, sin),
                    Rotation::Halves => rope_halves(turned, cos, sin),
                }
            }
            q[p * qd..(p + 1) * qd].copy_from_slice(&row[..qd]);
            for h in 0..hp.n_kv_head {
                let i = li * hp.n_kv_head + h;
                let k = &row[qd + h * hd..qd + (h + 1) * hd];
                let v = &row[qd + kvd + h * hd..qd + kvd + (h + 1) * hd];
                kv.keys[i].extend_from_slice(k);
                kv.values[i].extend_from_slice(v);
            }
        }
        Ok(())
    }

    /// The (head, position) pairs this thread attends for: every `threads`-th, so the longer
    /// causal rows of a prompt spread evenly.
    fn items(&self, t: usize) -> impl Iterator<Item = (usize, usize)> {
        let m = self.m;
        (t..self.w.hparams.n_head * m)
            .step_by(self.threads)
            .map(move |i| (i / m, i % m))
    }

    fn attention(&self, t: usize, li: usize) -> Result<(), EmbeddedError> {
        let hp = &self.w.hparams;
        let hd = hp.head_dim;
        let qd = hp.n_head * hd;
        let group = hp.n_head / hp.n_kv_head;
        let scale = hp.attn_scale;
        let layer = &self.w.layers[li];
        let q = self.sh.q.read().map_err(poisoned)?;
        let kv = self.sh.kv.read().map_err(poisoned)?;
        let mut guard = self.out(t)?;
        let buf = &mut *guard;
        buf.out.clear();
        for (h, p) in self.items(t) {
            let i = li * hp.n_kv_head + h / group;
            // Causal: position pos + p sees itself and everything before, or in a local layer
            // the window's last positions.
            let seen = self.pos + p + 1;
            let from = match layer.local {
                true => seen.saturating_sub(hp.sliding_window) * hd,
                false => 0,
            };
            let n = seen * hd;
            let start = buf.out.len();
            buf.out.resize(start + hd, 0.0);
            attend(
                &q[p * qd + h * hd..p * qd + (h + 1) * hd],
                &kv.keys[i][from..n],
                &kv.values[i][from..n],
                Scores {
                    scale,
                    softcap: hp.attn_softcap,
                },
                &mut buf.scores,
                &mut buf.out[start..],
            );
        }
        Ok(())
    }

    /// Assembles the attention outputs (`m × n_head·head_dim`) into `f`.
    fn gather_attention(&self, f: &mut Vec<f32>) -> Result<(), EmbeddedError> {
        let hp = &self.w.hparams;
        let hd = hp.head_dim;
        let qd = hp.n_head * hd;
        f.resize(self.m * qd, 0.0);
        for t in 0..self.threads {
            let out = self.out(t)?;
            for ((h, p), part) in self.items(t).zip(out.out.chunks_exact(hd)) {
                f[p * qd + h * hd..p * qd + (h + 1) * hd].copy_from_slice(part);
            }
        }
        Ok(())
    }
}
