//! The element-wise parts of the forward pass, in plain loops the compiler vectorizes.

/// Dot product of two f32 slices (eight independent sums, so it vectorizes).
#[inline]
pub(crate) fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// `out += a * v`.
#[inline]
pub(crate) fn axpy(out: &mut [f32], a: f32, v: &[f32]) {
    for (o, x) in out.iter_mut().zip(v) {
        *o += a * x;
    }
}

/// `out += v`.
pub(crate) fn add(out: &mut [f32], v: &[f32]) {
    for (o, x) in out.iter_mut().zip(v) {
        *o += x;
    }
}

/// RMS normalization of one row, summed in order as candle-nn's `rms_norm` does.
pub(crate) fn rms_norm(x: &[f32], weight: &[f32], eps: f32, out: &mut [f32]) {
    let sum2 = x.iter().map(|v| v * v).sum::<f32>();
    let m = (sum2 / x.len() as f32 + eps).sqrt();
    for ((o, v), w) in out.iter_mut().zip(x).zip(weight) {
        *o = *v / m * *w;
    }
}

/// [`rms_norm`] of a row in place (Qwen3's per-head query and key norms).
pub(crate) fn rms_norm_in_place(x: &mut [f32], weight: &[f32], eps: f32) {
    let sum2 = x.iter().map(|v| v * v).sum::<f32>();
    let m = (sum2 / x.len() as f32 + eps).sqrt();
    for (v, w) in x.iter_mut().zip(weight) {
        *v = *v / m * *w;
    }
}

/// GELU(gate) · up, GELU in its tanh approximation (candle's `gelu`, llama.cpp's Gemma).
#[inline]
pub(crate) fn geglu(gate: f32, up: f32) -> f32 {
    const SQRT_2_OVER_PI: f32 = 0.797_884_6;
    let inner = SQRT_2_OVER_PI * gate * (1.0 + 0.044_715 * gate * gate);
    0.5 * gate * (1.0 + inner.tanh()) * up
}

/// `cap · tanh(x / cap)`: Gemma 2's soft-capping of attention scores and logits.
#[inline]
pub(crate) fn softcap(x: f32, cap: f32) -> f32 {
    (x / cap).tanh() * cap
}

/// How raw attention scores (q·k) become the softmax's input.
#[derive(Clone, Copy)]
pub(crate) struct Scores {
    pub scale: f32,
    pub softcap: Option<f32>,
}

/// SiLU(gate) · up.
#[inline]
pub(crate) fn swiglu(gate: f32, up: f32) -> f32 {
    gate / ((-gate).exp() + 1.0) * up
}

/// The interleaved rotation of llama's GGUF Q/K layout (candle-nn's `rope_i`), in place on one
/// head: pairs `(x[2i], x[2i+1])` turn by the position's angle `i`.
pub(crate) fn rope(head: &mut [f32], cos: &[f32], sin: &[f32]) {
    for ((pair, c), s) in head.chunks_exact_mut(2).zip(cos).zip(sin) {
        let (a, b) = (pair[0], pair[1]);
        pair[0] = a * c - b * s;
        pair[1] = a * s + b * c;
    }
}

/// The rotary embedding on the two halves of a head: dimension `i` turns with `i + hd/2`
/// (llama.cpp's "NEOX" rotation, candle's `rope`).
pub(crate) fn rope_halves(head: &mut [f32], cos: &[f32], sin: &[f32]) {
    let half = head.len() / 2;
    let (first, second) = head.split_at_mut(half);
    for (((a, b), c), s) in first.iter_mut().zip(second.iter_mut()).zip(cos).zip(sin) {
        let (x, y) = (*a, *b);
        *a = x * c - y * s;
        *b = x * s + y * c;
    }
}

/// One query over `n` cached positions of one key/value head (`keys`/`values`: `n × hd`, position
/// major): softmax(q·k · scale, soft-capped where the model caps) · v into `out`. `scores` is
/// scratch.
pub(crate) fn attend(
    q: &[f32],
    keys: &[f32],
    values: &[f32],
    how: Scores,
    scores: &mut Vec<f32>,
    out: &mut [f32],
) {
    let hd = q.len();
    scores.clear();
    let scale = how.scale;
    scores.extend(keys.chunks_exact(hd).map(|k| dot_f32(q, k) * scale));
    if let Some(cap) = how.softcap {
        scores.iter_mut().for_each(|s| *s = softcap(*s, cap));
    }
    let max = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for s in scores.iter_mut() {
        *s = (*s - max).exp();
        sum += *s;
    }
    out.fill(0.0);
    let inv = 1.0 / sum;
    for (p, v) in scores.iter().zip(values.chunks_exact(hd)) {
        axpy(out, p * inv, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dot_matches_a_plain_sum_with_a_tail() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.25).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot_f32(&a, &b) - plain).abs() < 1e-4);
    }

    #[test]
    fn attention_over_one_position_returns_its_value() {
        let q = [1.0, 0.0, 0.5, 0.25];
        let k = [0.3, 0.1, 0.2, 0.9];
        let v = [4.0, -1.0, 2.0, 0.5];
        let mut out = [0.0; 4];
        let how = Scores {
            scale: 0.5,
            softcap: None,
        };
        attend(&q, &k, &v, how, &mut Vec::new(), &mut out);
        assert_eq!(out, v);
    }

    #[test]
    fn rope_on_halves_pairs_each_dimension_with_its_twin() {
        let mut h = [1.0, 2.0, 3.0, 4.0];
        rope_halves(&mut h, &[1.0, 0.0], &[0.0, 1.0]);
        // Pair (0, 2) unturned, pair (1, 3) a quarter turn.
        assert_eq!(h, [1.0, -4.0, 3.0, 2.0]);
    }

    #[test]
    fn rope_at_angle_zero_is_the_identity_and_quarter_turn_rotates() {
        let mut h = [1.0, 2.0, 3.0, 4.0];
        rope(&mut h, &[1.0, 0.0], &[0.0, 1.0]);
        assert_eq!(h, [1.0, 2.0, -4.0, 3.0]);
    }
}
