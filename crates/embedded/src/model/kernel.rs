//! The matrix kernel: quantized weight rows times activation rows quantized to 8 bits (as
//! llama.cpp does), in two block formats — 8-bit (GGUF's Q8_0: bytes and a scale) and 4-bit
//! (GGUF's Q4_1: nibbles, a scale and a minimum; Q4_0 is the special case minimum = −8 · scale).
//!
//! Decoding one token reads every weight once, so at this model size the speed is set by how fast
//! the weights stream from memory, not by arithmetic. Hence:
//! - 4-bit weights stay 4-bit (the default model is Q4_1): 24 bytes per 32 weights, not 36;
//! - the rows are packed in groups of four, their blocks interleaved (`[group][block][row]`), so a
//!   group is one sequential read (measured: twice the throughput of four separate row streams)
//!   and each activation block is loaded once for four rows;
//! - scales are kept as f32 (no f16 conversion in the loop).
//!
//! The SIMD code is AVX2 through `pulp`'s safe intrinsics, chosen at run time; other CPUs take a
//! plain loop the compiler vectorizes.

use std::ops::Range;

/// Values per block.
pub(crate) const QK: usize = 32;
/// Rows per group.
pub(crate) const GROUP: usize = 4;

/// An 8-bit block: value = `qs[i] · d`.
#[derive(Clone, Copy, Default)]
pub(crate) struct B8 {
    pub d: f32,
    pub qs: [i8; QK],
}

/// A 4-bit block: value `i` (< 16) = `(qs[i] & 15) · d + m`, value `i + 16` = `(qs[i] >> 4) · d + m`.
#[derive(Clone, Copy, Default)]
pub(crate) struct B4 {
    pub d: f32,
    pub m: f32,
    pub qs: [u8; QK / 2],
}

/// Weight rows in groups of [`GROUP`] (the last padded with zero rows), blocks interleaved.
pub(crate) enum Packed {
    Q8(Vec<B8>),
    Q4(Vec<B4>),
}

/// Rounds half away from zero, as C's `roundf` (which ggml's quantizer uses); `v` is within ±128.
#[inline]
fn round_away(v: f32) -> i8 {
    let t = v as i32;
    let f = v - t as f32;
    let r = if f >= 0.5 {
        t + 1
    } else if f <= -0.5 {
        t - 1
    } else {
        t
    };
    r as i8
}

fn f16(lo: u8, hi: u8) -> f32 {
    half::f16::from_le_bytes([lo, hi]).to_f32()
}

impl B8 {
    /// ggml's Q8_0 quantization: the scale is max|v| / 127 rounded to f16, the bytes
    /// round(v · 127 / max|v|).
    pub fn quantize(values: &[f32]) -> B8 {
        let amax = values.iter().fold(0f32, |a, v| a.max(v.abs()));
        let d = amax / 127.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let mut qs = [0i8; QK];
        for (o, v) in qs.iter_mut().zip(values) {
            *o = round_away(v * id);
        }
        B8 {
            d: half::f16::from_f32(d).to_f32(),
            qs,
        }
    }

    /// A GGUF Q8_0 block (an f16 scale, 32 bytes), exactly.
    pub fn from_q8_0(bytes: &[u8]) -> B8 {
        let mut qs = [0i8; QK];
        for (o, b) in qs.iter_mut().zip(&bytes[2..]) {
            *o = *b as i8;
        }
        B8 {
            d: f16(bytes[0], bytes[1]),
            qs,
        }
    }

    fn dequantize(&self, out: &mut [f32]) {
        for (o, q) in out.iter_mut().zip(&self.qs) {
            *o = *q as f32 * self.d;
        }
    }
}

impl B4 {
    /// ggml's Q4_1 quantization: scale (max − min) / 15, minimum min.
    pub fn quantize(values: &[f32]) -> B4 {
        let min = values.iter().copied().fold(f32::INFINITY, f32::min);
        let max = values.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let d = (max - min) / 15.0;
        let id = if d != 0.0 { 1.0 / d } else { 0.0 };
        let q = |v: f32| (((v - min) * id + 0.5) as u8).min(15);
        let mut qs = [0u8; QK / 2];
        for (i, o) in qs.iter_mut().enumerate() {
            *o = q(values[i]) | (q(values[i + QK / 2]) << 4);
        }
        B4 { d, m: min, qs }
    }

    /// A GGUF Q4_1 block (f16 scale, f16 minimum, 16 bytes), exactly.
    pub fn from_q4_1(bytes: &[u8]) -> B4 {
        let mut qs = [0u8; QK / 2];
        qs.copy_from_slice(&bytes[4..4 + QK / 2]);
        B4 {
            d: f16(bytes[0], bytes[1]),
            m: f16(bytes[2], bytes[3]),
            qs,
        }
    }

    /// A GGUF Q4_0 block (f16 scale, 16 bytes; value = (nibble − 8) · scale), exactly.
    pub fn from_q4_0(bytes: &[u8]) -> B4 {
        let d = f16(bytes[0], bytes[1]);
        let mut qs = [0u8; QK / 2];
        qs.copy_from_slice(&bytes[2..2 + QK / 2]);
        B4 { d, m: -8.0 * d, qs }
    }

    fn dequantize(&self, out: &mut [f32]) {
        let (lo, hi) = out.split_at_mut(QK / 2);
        for ((l, h), q) in lo.iter_mut().zip(hi).zip(&self.qs) {
            *l = (q & 15) as f32 * self.d + self.m;
            *h = (q >> 4) as f32 * self.d + self.m;
        }
    }
}

/// Activation rows quantized to 8 bits: per block the bytes, the scale, and scale · Σ bytes (the
/// 4-bit blocks' minimum multiplies it).
#[derive(Default)]
pub(crate) struct QAct {
    qs: Vec<[i8; QK]>,
    d: Vec<f32>,
    s: Vec<f32>,
}

impl QAct {
    /// Quantizes `values` (a multiple of 32) in blocks.
    pub fn set(&mut self, values: &[f32]) {
        self.qs.clear();
        self.d.clear();
        self.s.clear();
        for block in values.chunks_exact(QK) {
            let b = B8::quantize(block);
            let sum: i32 = b.qs.iter().map(|q| *q as i32).sum();
            self.qs.push(b.qs);
            self.d.push(b.d);
            self.s.push(b.d * sum as f32);
        }
    }
}

impl Packed {
    /// Packs `rows` rows of `nb` blocks given row by row (`block(r, b)`).
    pub fn pack<T: Copy + Default>(
        rows: usize,
        nb: usize,
        block: impl Fn(usize, usize) -> T,
    ) -> Vec<T> {
        let groups = rows.div_ceil(GROUP);
        let mut out = Vec::with_capacity(groups * GROUP * nb);
        for g in 0..groups {
            for b in 0..nb {
                for j in 0..GROUP {
                    let r = g * GROUP + j;
                    out.push(if r < rows { block(r, b) } else { T::default() });
                }
            }
        }
        out
    }

    /// Row `r` (of `nb` blocks) as f32.
    pub fn row_into(&self, r: usize, nb: usize, out: &mut [f32]) {
        let at = |b: usize| ((r / GROUP) * nb + b) * GROUP + r % GROUP;
        for (b, o) in out.chunks_exact_mut(QK).enumerate().take(nb) {
            match self {
                Packed::Q8(w) => w[at(b)].dequantize(o),
                Packed::Q4(w) => w[at(b)].dequantize(o),
            }
        }
    }

    /// For the rows of `groups` (a matrix of `rows` rows of `nb` blocks) and each activation row
    /// `p < m`: `out[p * stride + r - first] = row r · activation p`, `first` the groups' first
    /// row; padding rows are not written.
    #[allow(clippy::too_many_arguments)]
    pub fn product(
        &self,
        rows: usize,
        nb: usize,
        groups: Range<usize>,
        x: &QAct,
        m: usize,
        out: &mut [f32],
        stride: usize,
    ) {
        let job = Job {
            rows,
            nb,
            groups,
            x,
            m,
            stride,
        };
        #[cfg(target_arch = "x86_64")]
        if let Some(simd) = pulp::x86::V3::try_new() {
            simd.vectorize(avx2::Product {
                simd,
                w: self,
                job,
                out,
            });
            return;
        }
        job.portable(self, out);
    }
}

struct Job<'a> {
    rows: usize,
    nb: usize,
    groups: Range<usize>,
    x: &'a QAct,
    m: usize,
    stride: usize,
}

/// The four dot products of one group with one activation row. A trait rather than a closure:
/// the SIMD versions must be inlined into the function `pulp` compiles with AVX2 enabled, which
/// `#[inline(always)]` guarantees and a closure does not (in debug builds it stays a call).
trait GroupDot<T> {
    fn dot(&self, blocks: &[T], x: &QAct, p: usize, nb: usize) -> [f32; GROUP];
}

impl Job<'_> {
    /// Runs `d` over every group and activation row, writing the results where rows exist.
    #[inline(always)]
    fn each<T, D: GroupDot<T>>(&self, w: &[T], out: &mut [f32], d: &D) {
        let first = self.groups.start * GROUP;
        let per_group = GROUP * self.nb;
        for g in self.groups.clone() {
            let Some(blocks) = w.get(g * per_group..(g + 1) * per_group) else {
                return;
            };
            for p in 0..self.m {
                let v = d.dot(blocks, self.x, p, self.nb);
                for (j, v) in v.iter().enumerate() {
                    let r = g * GROUP + j;
                    if r < self.rows {
                        out[p * self.stride + r - first] = *v;
                    }
                }
            }
        }
    }

    fn portable(&self, w: &Packed, out: &mut [f32]) {
        match w {
            Packed::Q8(w) => self.each(w, out, &Portable),
            Packed::Q4(w) => self.each(w, out, &Portable),
        }
    }
}

struct Portable;

impl GroupDot<B8> for Portable {
    fn dot(&self, blocks: &[B8], x: &QAct, p: usize, nb: usize) -> [f32; GROUP] {
        let mut acc = [0f32; GROUP];
        for (b, quad) in blocks.chunks_exact(GROUP).enumerate() {
            let (y, dy) = (&x.qs[p * nb + b], x.d[p * nb + b]);
            for (a, blk) in acc.iter_mut().zip(quad) {
                let s: i32 = blk
                    .qs
                    .iter()
                    .zip(y)
                    .map(|(u, v)| *u as i32 * *v as i32)
                    .sum();
                *a += s as f32 * (blk.d * dy);
            }
        }
        acc
    }
}

impl GroupDot<B4> for Portable {
    fn dot(&self, blocks: &[B4], x: &QAct, p: usize, nb: usize) -> [f32; GROUP] {
        let mut acc = [0f32; GROUP];
        for (b, quad) in blocks.chunks_exact(GROUP).enumerate() {
            let i = p * nb + b;
            let (y, dy, sy) = (&x.qs[i], x.d[i], x.s[i]);
            let (lo, hi) = y.split_at(QK / 2);
            for (a, blk) in acc.iter_mut().zip(quad) {
                let s: i32 = blk
                    .qs
                    .iter()
                    .zip(lo.iter().zip(hi))
                    .map(|(q, (l, h))| (q & 15) as i32 * *l as i32 + (q >> 4) as i32 * *h as i32)
                    .sum();
                *a += s as f32 * (blk.d * dy) + blk.m * sy;
            }
        }
        acc
    }
}

#[cfg(target_arch = "x86_64")]
mod avx2 {
    use std::arch::x86_64::{__m128i, __m256, __m256i};

    use pulp::x86::V3;

    use super::{GroupDot, Job, Packed, QAct, B4, B8, GROUP, QK};

    pub(super) struct Product<'a> {
        pub simd: V3,
        pub w: &'a Packed,
        pub job: Job<'a>,
        pub out: &'a mut [f32],
    }

    /// Σ a·b over a block of signed bytes, as 8 lanes (|a|, |b| ≤ 127: `maddubs` cannot
    /// saturate).
    #[inline(always)]
    fn dot8(simd: V3, a: &[i8; QK], b: __m256i) -> __m256 {
        let (avx, avx2) = (simd.avx, simd.avx2);
        let a: __m256i = pulp::cast(*a);
        let abs_a = avx2._mm256_sign_epi8(a, a);
        let b_signed = avx2._mm256_sign_epi8(b, a);
        let pairs = avx2._mm256_maddubs_epi16(abs_a, b_signed);
        avx._mm256_cvtepi32_ps(avx2._mm256_madd_epi16(pairs, avx._mm256_set1_epi16(1)))
    }

    /// Σ nibble·b over a 4-bit block (low nibbles are values 0–15, high ones 16–31).
    #[inline(always)]
    fn dot4(simd: V3, a: &[u8; QK / 2], b: __m256i) -> __m256 {
        let (avx, avx2, sse2) = (simd.avx, simd.avx2, simd.sse2);
        let raw: __m128i = pulp::cast(*a);
        let mask = sse2._mm_set1_epi8(0x0F);
        let lo = sse2._mm_and_si128(raw, mask);
        let hi = sse2._mm_and_si128(sse2._mm_srli_epi16::<4>(raw), mask);
        let q = avx._mm256_set_m128i(hi, lo);
        let pairs = avx2._mm256_maddubs_epi16(q, b);
        avx._mm256_cvtepi32_ps(avx2._mm256_madd_epi16(pairs, avx._mm256_set1_epi16(1)))
    }

    #[inline(always)]
    fn sum(v: __m256) -> f32 {
        let l: [f32; 8] = pulp::cast(v);
        ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
    }

    struct Simd(V3);

    impl GroupDot<B8> for Simd {
        #[inline(always)]
        fn dot(&self, blocks: &[B8], x: &QAct, p: usize, nb: usize) -> [f32; GROUP] {
            let simd = self.0;
            let (avx, fma) = (simd.avx, simd.fma);
            let mut acc = [avx._mm256_setzero_ps(); GROUP];
            let (xq, xd) = (&x.qs[p * nb..(p + 1) * nb], &x.d[p * nb..(p + 1) * nb]);
            for ((quad, y), dy) in blocks.chunks_exact(GROUP).zip(xq).zip(xd) {
                let y: __m256i = pulp::cast(*y);
                for (a, blk) in acc.iter_mut().zip(quad) {
                    let scale = avx._mm256_set1_ps(blk.d * dy);
                    *a = fma._mm256_fmadd_ps(dot8(simd, &blk.qs, y), scale, *a);
                }
            }
            let mut r = [0f32; GROUP];
            for (r, a) in r.iter_mut().zip(acc) {
                *r = sum(a);
            }
            r
        }
    }

    impl GroupDot<B4> for Simd {
        #[inline(always)]
        fn dot(&self, blocks: &[B4], x: &QAct, p: usize, nb: usize) -> [f32; GROUP] {
            let simd = self.0;
            let (avx, fma) = (simd.avx, simd.fma);
            let mut acc = [avx._mm256_setzero_ps(); GROUP];
            let mut mins = [0f32; GROUP];
            let range = p * nb..(p + 1) * nb;
            let (xq, xd, xs) = (&x.qs[range.clone()], &x.d[range.clone()], &x.s[range]);
            for (((quad, y), dy), sy) in blocks.chunks_exact(GROUP).zip(xq).zip(xd).zip(xs) {
                let y: __m256i = pulp::cast(*y);
                for ((a, mn), blk) in acc.iter_mut().zip(mins.iter_mut()).zip(quad) {
                    let scale = avx._mm256_set1_ps(blk.d * dy);
                    *a = fma._mm256_fmadd_ps(dot4(simd, &blk.qs, y), scale, *a);
                    *mn += blk.m * sy;
                }
            }
            let mut r = [0f32; GROUP];
            for ((r, a), mn) in r.iter_mut().zip(acc).zip(mins) {
                *r = sum(a) + mn;
            }
            r
        }
    }

    impl pulp::NullaryFnOnce for Product<'_> {
        type Output = ();

        #[inline(always)]
        fn call(self) {
            let Product { simd, w, job, out } = self;
            match w {
                Packed::Q8(w) => job.each(w, out, &Simd(simd)),
                Packed::Q4(w) => job.each(w, out, &Simd(simd)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| (((i as u32).wrapping_mul(2654435761) ^ seed) % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }

    /// Both formats, SIMD and portable, against f32 maths on the dequantized weights.
    #[test]
    fn products_match_f32_maths_on_the_stored_weights() {
        let (rows, cols, m) = (11, 96, 3);
        let nb = cols / QK;
        let wf = values(rows * cols, 7);
        let xf = values(m * cols, 99);
        let mut x = QAct::default();
        x.set(&xf);
        let blocks8 = |r: usize, b: usize| B8::quantize(&wf[r * cols + b * QK..][..QK]);
        let blocks4 = |r: usize, b: usize| B4::quantize(&wf[r * cols + b * QK..][..QK]);
        for w in [
            Packed::Q8(Packed::pack(rows, nb, blocks8)),
            Packed::Q4(Packed::pack(rows, nb, blocks4)),
        ] {
            let groups = rows.div_ceil(GROUP);
            let mut fast = vec![f32::NAN; m * rows];
            let mut plain = vec![f32::NAN; m * rows];
            w.product(rows, nb, 0..groups, &x, m, &mut fast, rows);
            let job = Job {
                rows,
                nb,
                groups: 0..groups,
                x: &x,
                m,
                stride: rows,
            };
            job.portable(&w, &mut plain);
            let mut row = vec![0.0; cols];
            for r in 0..rows {
                w.row_into(r, nb, &mut row);
                for p in 0..m {
                    let pairs = row.iter().zip(&xf[p * cols..(p + 1) * cols]);
                    let exact: f32 = pairs.clone().map(|(a, b)| a * b).sum();
                    let magnitude: f32 = pairs.map(|(a, b)| (a * b).abs()).sum();
                    let (f, s) = (fast[p * rows + r], plain[p * rows + r]);
                    assert!((f - s).abs() < 1e-4 * magnitude, "{f} vs {s}");
                    // The activations' 8-bit rounding: well under 1% of Σ|w·x|.
                    assert!(
                        (f - exact).abs() < 0.005 * magnitude,
                        "row {r}: {f} vs {exact}"
                    );
                }
            }
        }
    }

    #[test]
    fn quantization_matches_ggml_q8_0() {
        use candle_core::quantized::k_quants::{BlockQ8_0, GgmlType};
        let v = values(128, 3);
        let mut theirs = vec![BlockQ8_0::zeros(); 4];
        BlockQ8_0::from_float(&v, &mut theirs);
        let mut a = vec![0.0; 128];
        let mut b = vec![0.0; 128];
        for (blk, o) in v.chunks_exact(QK).zip(a.chunks_exact_mut(QK)) {
            B8::quantize(blk).dequantize(o);
        }
        BlockQ8_0::to_float(&theirs, &mut b);
        assert_eq!(a, b);
    }

    #[test]
    fn stored_4_bit_blocks_decode_like_candle() {
        use candle_core::quantized::{GgmlDType, QTensor};
        use candle_core::{Device, Tensor};
        let t = Tensor::from_vec(values(64, 5), (2, 32), &Device::Cpu).unwrap();
        for (dtype, size) in [(GgmlDType::Q4_1, 20), (GgmlDType::Q4_0, 18)] {
            let q = QTensor::quantize(&t, dtype).unwrap();
            let theirs = q.dequantize(&Device::Cpu).unwrap().flatten_all().unwrap();
            let theirs = theirs.to_vec1::<f32>().unwrap();
            let mut ours = vec![0.0; 64];
            for (blk, o) in q
                .data()
                .unwrap()
                .chunks_exact(size)
                .zip(ours.chunks_exact_mut(QK))
            {
                match dtype {
                    GgmlDType::Q4_1 => B4::from_q4_1(blk).dequantize(o),
                    _ => B4::from_q4_0(blk).dequantize(o),
                }
            }
            assert_eq!(ours, theirs, "{dtype:?}");
        }
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(round_away(2.5), 3);
        assert_eq!(round_away(-2.5), -3);
        assert_eq!(round_away(2.49), 2);
        assert_eq!(round_away(-0.2), 0);
        assert_eq!(round_away(127.0), 127);
    }
}
