//! Weight matrices, converted at load from the GGUF's tensors into the kernel's packed formats,
//! and their products with a batch of activation rows.

use std::borrow::Cow;
use std::ops::Range;

use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::CpuStorage;

use super::kernel::{Packed, QAct, B4, B8, GROUP, QK};
use super::ops::dot_f32;
use crate::error::EmbeddedError;

/// Rows converted per step at load (a multiple of [`GROUP`]): bounds the f32 copy held while
/// converting a tensor that must be dequantized first.
const CONVERT_ROWS: usize = 256;

enum Rows {
    Packed(Packed),
    /// F32/F16/BF16 tensors, and rows whose length is not a multiple of 32.
    F32(Vec<f32>),
}

/// A `rows × cols` weight matrix (GGUF order: one row per output).
pub(crate) struct Matrix {
    pub rows: usize,
    pub cols: usize,
    data: Rows,
}

/// The input of a matrix product: `rows` activation rows of `cols` values and their 8-bit
/// quantization.
#[derive(Default)]
pub(crate) struct Activation {
    pub rows: usize,
    pub cols: usize,
    pub f: Vec<f32>,
    q: QAct,
}

impl Activation {
    /// Quantizes `f` (already filled with `rows × cols` values).
    pub fn quantize(&mut self) {
        if self.cols.is_multiple_of(QK) {
            self.q.set(&self.f);
        }
    }
}

/// The 4/5-bit types, which a load target may change (see [`Matrix::from_rows`]).
pub(crate) fn needs_requantize(dtype: GgmlDType) -> bool {
    matches!(
        dtype,
        GgmlDType::Q4_1 | GgmlDType::Q4_0 | GgmlDType::Q5_0 | GgmlDType::Q5_1
    )
}

/// Dequantizes a whole tensor (vectors: norms).
pub(crate) fn dequantize_all(t: &QTensor) -> Result<Vec<f32>, EmbeddedError> {
    let n = t.shape().elem_count();
    let data = t.data()?;
    to_f32(t.dtype(), &data, n)
}

fn to_f32(dtype: GgmlDType, bytes: &[u8], n: usize) -> Result<Vec<f32>, EmbeddedError> {
    match dtype.from_data(Cow::Borrowed(bytes)).dequantize(n)? {
        CpuStorage::F32(v) => Ok(v),
        _ => Err(EmbeddedError::Format(format!(
            "cannot dequantize a {dtype:?} tensor"
        ))),
    }
}

/// Blocks read straight from stored bytes: `size` bytes per block, converted by `read`.
fn from_bytes<T: Copy + Default>(
    data: &[u8],
    rows: usize,
    nb: usize,
    size: usize,
    read: fn(&[u8]) -> T,
) -> Vec<T> {
    Packed::pack(rows, nb, |r, b| {
        let at = (r * nb + b) * size;
        read(&data[at..at + size])
    })
}

/// Blocks quantized from dequantized rows, a slice of rows at a time.
fn requantize<T: Copy + Default>(
    data: &[u8],
    dtype: GgmlDType,
    rows: usize,
    cols: usize,
    quantize: fn(&[f32]) -> T,
) -> Result<Vec<T>, EmbeddedError> {
    let nb = cols / QK;
    let row_bytes = cols / dtype.block_size() * dtype.type_size();
    let mut out = Vec::with_capacity(rows.div_ceil(GROUP) * GROUP * nb);
    for chunk in data.chunks(row_bytes * CONVERT_ROWS) {
        let n = chunk.len() / row_bytes;
        let f = to_f32(dtype, chunk, n * cols)?;
        out.extend(Packed::pack(n, nb, |r, b| {
            quantize(&f[r * cols + b * QK..r * cols + (b + 1) * QK])
        }));
    }
    Ok(out)
}

impl Matrix {
    /// Converts rows `range` of a 2-D GGUF tensor (all of them, or a part of a fused tensor:
    /// Phi-3's `attn_qkv` and gate|up `ffn_up`, cut from the stored bytes so the weights stay as
    /// stored): Q8_0, Q4_1 and Q4_0 are kept exactly (8-bit and 4-bit blocks), F32/F16/BF16
    /// become F32, Q5_0/Q5_1 become 8-bit blocks (4-bit when `target` is Q4_0), anything else
    /// (k-quants) 8-bit blocks (a small second rounding). Returns whether the tensor is one of
    /// the 4/5-bit types converted (the count `Weights::requantized` reports).
    pub fn from_rows(
        t: &QTensor,
        range: Range<usize>,
        target: GgmlDType,
    ) -> Result<(Matrix, bool), EmbeddedError> {
        let (all_rows, cols) = t.shape().dims2()?;
        let dtype = t.dtype();
        let blocks = cols.is_multiple_of(QK);
        let converted = needs_requantize(dtype) && dtype != target && blocks;
        let stored = t.data()?;
        let row_bytes = cols / dtype.block_size() * dtype.type_size();
        if range.start > range.end
            || range.end > all_rows
            || !cols.is_multiple_of(dtype.block_size())
            || stored.len() < all_rows * row_bytes
        {
            return Err(EmbeddedError::Format(format!(
                "rows {range:?} of a {all_rows}×{cols} {dtype:?} tensor"
            )));
        }
        let rows = range.len();
        let data = &stored[range.start * row_bytes..range.end * row_bytes];
        let nb = cols / QK;
        let packed = |p: Packed| Rows::Packed(p);
        let out = match dtype {
            GgmlDType::F32 | GgmlDType::F16 | GgmlDType::BF16 => {
                Rows::F32(to_f32(dtype, data, rows * cols)?)
            }
            _ if !blocks => Rows::F32(to_f32(dtype, data, rows * cols)?),
            GgmlDType::Q8_0 => packed(Packed::Q8(from_bytes(data, rows, nb, 34, B8::from_q8_0))),
            GgmlDType::Q4_1 => packed(Packed::Q4(from_bytes(data, rows, nb, 20, B4::from_q4_1))),
            GgmlDType::Q4_0 => packed(Packed::Q4(from_bytes(data, rows, nb, 18, B4::from_q4_0))),
            GgmlDType::Q5_0 | GgmlDType::Q5_1 if target == GgmlDType::Q4_0 => packed(Packed::Q4(
                requantize(data, dtype, rows, cols, B4::quantize)?,
            )),
            _ => packed(Packed::Q8(requantize(
                data,
                dtype,
                rows,
                cols,
                B8::quantize,
            )?)),
        };
        let m = Matrix {
            rows,
            cols,
            data: out,
        };
        let expected = rows.div_ceil(GROUP) * GROUP * nb;
        let len = match &m.data {
            Rows::Packed(Packed::Q8(b)) => b.len() == expected,
            Rows::Packed(Packed::Q4(b)) => b.len() == expected,
            Rows::F32(v) => v.len() == rows * cols,
        };
        if !len {
            return Err(EmbeddedError::Format(format!(
                "a {rows}×{cols} {dtype:?} tensor has the wrong size"
            )));
        }
        Ok((m, converted))
    }

    /// Groups of rows, the unit products are split in.
    pub fn groups(&self) -> usize {
        self.rows.div_ceil(GROUP)
    }

    /// The first row of group `g` (`rows` for `g = groups()`).
    pub fn row_at(&self, g: usize) -> usize {
        (g * GROUP).min(self.rows)
    }

    /// Row `r` as f32 (embedding lookup).
    pub fn row_into(&self, r: usize, out: &mut [f32]) {
        let c = self.cols;
        match &self.data {
            Rows::Packed(p) => p.row_into(r, c / QK, out),
            Rows::F32(v) => out.copy_from_slice(&v[r * c..(r + 1) * c]),
        }
    }

    /// For the rows of `groups` and each activation row `p < m`:
    /// `out[p * stride + r - row_at(groups.start)] = row r · activation p`.
    pub fn product(
        &self,
        groups: Range<usize>,
        act: &Activation,
        m: usize,
        out: &mut [f32],
        stride: usize,
    ) {
        let c = self.cols;
        match &self.data {
            Rows::Packed(p) => p.product(self.rows, c / QK, groups, &act.q, m, out, stride),
            Rows::F32(v) => {
                let first = self.row_at(groups.start);
                for r in first..self.row_at(groups.end) {
                    for p in 0..m {
                        let x = &act.f[p * c..(p + 1) * c];
                        out[p * stride + r - first] = dot_f32(&v[r * c..(r + 1) * c], x);
                    }
                }
            }
        }
    }
}

/// Matrices whose rows are computed as one product (q, k and v: one input), split between
/// threads by groups.
pub(crate) struct Stack<'a>(pub &'a [&'a Matrix]);

impl Stack<'_> {
    pub fn groups(&self) -> usize {
        self.0.iter().map(|m| m.groups()).sum()
    }

    pub fn rows(&self) -> usize {
        self.0.iter().map(|m| m.rows).sum()
    }

    /// The stacked row where group `g` (of the stack) starts.
    pub fn row_at(&self, g: usize) -> usize {
        let (mut g, mut base) = (g, 0);
        for m in self.0 {
            if g <= m.groups() {
                return base + m.row_at(g);
            }
            g -= m.groups();
            base += m.rows;
        }
        base
    }

    /// The stacked rows of `groups`.
    pub fn rows_of(&self, groups: Range<usize>) -> Range<usize> {
        self.row_at(groups.start)..self.row_at(groups.end)
    }

    /// The rows of `groups` times every activation row, into `out` as `m × width` (`width` the
    /// number of rows).
    pub fn product(&self, groups: Range<usize>, act: &Activation, m: usize, out: &mut [f32]) {
        let mine = self.rows_of(groups.clone());
        let width = mine.len();
        let mut gbase = 0;
        for mat in self.0 {
            let lo = groups.start.max(gbase);
            let hi = groups.end.min(gbase + mat.groups());
            if lo < hi {
                let col = self.row_at(lo) - mine.start;
                mat.product(lo - gbase..hi - gbase, act, m, &mut out[col..], width);
            }
            gbase += mat.groups();
        }
    }
}
