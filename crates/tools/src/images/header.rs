//! The pixel size of an image from its header (PNG, JPEG, WebP, GIF, BMP), without decoding it:
//! an edit keeps its base image's aspect ratio. A JPEG's EXIF orientation is honoured (a phone's
//! portrait photo is stored landscape with orientation 6 or 8), so the size is the one a viewer
//! shows.
//!
//! Kept our own rather than the `imagesize` crate: that crate reports the stored size and
//! ignores EXIF orientation, which would turn a portrait photo's edit landscape; the formats here
//! are the five `image_generate` accepts, in about 150 lines with their tests.

/// Width and height as displayed; `None` when the header is not understood.
pub fn dimensions(bytes: &[u8]) -> Option<(u32, u32)> {
    let (w, h) = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        png(bytes)?
    } else if bytes.starts_with(&[0xFF, 0xD8]) {
        jpeg(bytes)?
    } else if bytes.len() >= 12 && bytes.starts_with(b"RIFF") && &bytes[8..12] == b"WEBP" {
        webp(bytes)?
    } else if bytes.starts_with(b"GIF87a") || bytes.starts_with(b"GIF89a") {
        (u32::from(le16(bytes, 6)?), u32::from(le16(bytes, 8)?))
    } else if bytes.starts_with(b"BM") {
        bmp(bytes)?
    } else {
        return None;
    };
    (w > 0 && h > 0).then_some((w, h))
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn le16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn be32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_be_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le32(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn le24(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes([
        *b.get(at)?,
        *b.get(at + 1)?,
        *b.get(at + 2)?,
        0,
    ]))
}

/// The IHDR chunk comes first: width and height at bytes 16..24.
fn png(b: &[u8]) -> Option<(u32, u32)> {
    (b.get(12..16)? == b"IHDR").then_some(())?;
    Some((be32(b, 16)?, be32(b, 20)?))
}

/// Walks the markers to the first start-of-frame, noting the EXIF orientation on the way.
fn jpeg(b: &[u8]) -> Option<(u32, u32)> {
    let mut at = 2;
    let mut orientation = 1;
    loop {
        // Markers may be padded with any number of 0xFF.
        while *b.get(at)? != 0xFF {
            at += 1;
        }
        while *b.get(at)? == 0xFF {
            at += 1;
        }
        let marker = *b.get(at)?;
        at += 1;
        match marker {
            // Standalone markers carry no length.
            0x01 | 0xD0..=0xD7 => continue,
            0xD9 | 0xDA => return None,
            _ => {}
        }
        let len = usize::from(be16(b, at)?);
        if len < 2 {
            return None;
        }
        let segment = b.get(at + 2..at + len)?;
        match marker {
            0xE1 if segment.starts_with(b"Exif\0\0") => {
                orientation = exif_orientation(&segment[6..]).unwrap_or(1);
            }
            0xC0..=0xCF if !matches!(marker, 0xC4 | 0xC8 | 0xCC) => {
                let h = u32::from(be16(segment, 1)?);
                let w = u32::from(be16(segment, 3)?);
                // Orientations 5-8 turn the picture by a quarter.
                return Some(if (5..=8).contains(&orientation) {
                    (h, w)
                } else {
                    (w, h)
                });
            }
            _ => {}
        }
        at += len;
    }
}

/// Tag 0x0112 of IFD0 in a TIFF structure.
fn exif_orientation(tiff: &[u8]) -> Option<u16> {
    let little = match tiff.get(0..2)? {
        b"II" => true,
        b"MM" => false,
        _ => return None,
    };
    let u16_at = |at: usize| {
        if little {
            le16(tiff, at)
        } else {
            be16(tiff, at)
        }
    };
    let u32_at = |at: usize| {
        if little {
            le32(tiff, at)
        } else {
            be32(tiff, at)
        }
    };
    let ifd = usize::try_from(u32_at(4)?).ok()?;
    let count = usize::from(u16_at(ifd)?);
    (0..count.min(256)).find_map(|i| {
        let entry = ifd + 2 + i * 12;
        (u16_at(entry)? == 0x0112).then(|| u16_at(entry + 8))?
    })
}

/// `VP8 ` (lossy), `VP8L` (lossless) or `VP8X` (extended) as the first chunk.
fn webp(b: &[u8]) -> Option<(u32, u32)> {
    match b.get(12..16)? {
        b"VP8 " => {
            (b.get(23..26)? == [0x9D, 0x01, 0x2A]).then_some(())?;
            Some((
                u32::from(le16(b, 26)? & 0x3FFF),
                u32::from(le16(b, 28)? & 0x3FFF),
            ))
        }
        b"VP8L" => {
            (*b.get(20)? == 0x2F).then_some(())?;
            let bits = le32(b, 21)?;
            Some(((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1))
        }
        b"VP8X" => Some((le24(b, 24)? + 1, le24(b, 27)? + 1)),
        _ => None,
    }
}

/// The DIB header after the 14-byte file header: `BITMAPCOREHEADER` (12 bytes, 16-bit sizes) or
/// a later one (32-bit signed sizes; a negative height means top-down rows).
fn bmp(b: &[u8]) -> Option<(u32, u32)> {
    if le32(b, 14)? == 12 {
        return Some((u32::from(le16(b, 18)?), u32::from(le16(b, 20)?)));
    }
    let w = i32::from_le_bytes(b.get(18..22)?.try_into().ok()?);
    let h = i32::from_le_bytes(b.get(22..26)?.try_into().ok()?);
    Some((w.unsigned_abs(), h.unsigned_abs()))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn png_of(w: u32, h: u32) -> Vec<u8> {
        let mut b = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
        b
    }

    /// SOI, an optional APP1 EXIF with one orientation entry (big-endian TIFF), a DQT to skip,
    /// then SOF2 (progressive).
    fn jpeg_of(w: u16, h: u16, orientation: Option<u16>) -> Vec<u8> {
        let mut b = vec![0xFF, 0xD8];
        if let Some(o) = orientation {
            let mut tiff = b"MM\0\x2a\0\0\0\x08".to_vec();
            tiff.extend_from_slice(&[0, 1, 0x01, 0x12, 0, 3, 0, 0, 0, 1]);
            tiff.extend_from_slice(&o.to_be_bytes());
            tiff.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
            let mut seg = b"Exif\0\0".to_vec();
            seg.extend_from_slice(&tiff);
            b.extend_from_slice(&[0xFF, 0xE1]);
            b.extend_from_slice(&u16::try_from(seg.len() + 2).unwrap().to_be_bytes());
            b.extend_from_slice(&seg);
        }
        b.extend_from_slice(&[0xFF, 0xDB, 0x00, 0x04, 0x00, 0x00]);
        b.extend_from_slice(&[0xFF, 0xFF, 0xC2, 0x00, 0x0B, 0x08]);
        b.extend_from_slice(&h.to_be_bytes());
        b.extend_from_slice(&w.to_be_bytes());
        b.extend_from_slice(&[0x01, 0x01, 0x11, 0x00]);
        b.extend_from_slice(&[0xFF, 0xD9]);
        b
    }

    fn riff(chunk: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut b = b"RIFF\0\0\0\0WEBP".to_vec();
        b.extend_from_slice(chunk);
        b.extend_from_slice(&u32::try_from(data.len()).unwrap().to_le_bytes());
        b.extend_from_slice(data);
        b
    }

    #[test]
    fn png_jpeg_webp_gif_bmp() {
        assert_eq!(dimensions(&png_of(1600, 900)), Some((1600, 900)));
        assert_eq!(dimensions(&jpeg_of(4032, 3024, None)), Some((4032, 3024)));
        // EXIF orientation 6 (rotate 90°): displayed portrait.
        assert_eq!(
            dimensions(&jpeg_of(4032, 3024, Some(6))),
            Some((3024, 4032))
        );
        assert_eq!(
            dimensions(&jpeg_of(4032, 3024, Some(3))),
            Some((4032, 3024))
        );

        // Lossy: frame tag, start code, 14-bit sizes with scale bits set.
        let mut vp8 = vec![0, 0, 0, 0x9D, 0x01, 0x2A];
        vp8.extend_from_slice(&(640u16 | 0x4000).to_le_bytes());
        vp8.extend_from_slice(&(480u16 | 0x8000).to_le_bytes());
        assert_eq!(dimensions(&riff(b"VP8 ", &vp8)), Some((640, 480)));
        // Lossless: 0x2F, then (w-1) in 14 bits and (h-1) in the next 14.
        let bits: u32 = (1023 - 1) | ((767 - 1) << 14);
        let mut vp8l = vec![0x2F];
        vp8l.extend_from_slice(&bits.to_le_bytes());
        assert_eq!(dimensions(&riff(b"VP8L", &vp8l)), Some((1023, 767)));
        // Extended: flags, reserved, 24-bit (w-1) and (h-1).
        let mut vp8x = vec![0x10, 0, 0, 0];
        vp8x.extend_from_slice(&(3000u32 - 1).to_le_bytes()[..3]);
        vp8x.extend_from_slice(&(1000u32 - 1).to_le_bytes()[..3]);
        assert_eq!(dimensions(&riff(b"VP8X", &vp8x)), Some((3000, 1000)));

        let mut gif = b"GIF89a".to_vec();
        gif.extend_from_slice(&320u16.to_le_bytes());
        gif.extend_from_slice(&200u16.to_le_bytes());
        assert_eq!(dimensions(&gif), Some((320, 200)));

        let mut bmp = b"BM".to_vec();
        bmp.extend_from_slice(&[0; 12]);
        bmp.extend_from_slice(&40u32.to_le_bytes());
        bmp.extend_from_slice(&800i32.to_le_bytes());
        bmp.extend_from_slice(&(-600i32).to_le_bytes());
        assert_eq!(dimensions(&bmp), Some((800, 600)));
    }

    #[test]
    fn truncated_or_foreign_headers_are_none() {
        let png = png_of(10, 10);
        for cut in 0..png.len() - 9 {
            assert_eq!(dimensions(&png[..cut]), None, "{cut}");
        }
        let jpeg = jpeg_of(10, 10, Some(6));
        for cut in 0..jpeg.len() - 6 {
            assert_eq!(dimensions(&jpeg[..cut]), None, "{cut}");
        }
        assert_eq!(dimensions(&png_of(0, 10)), None);
        assert_eq!(dimensions(b"%PDF-1.7"), None);
        // A JPEG segment length below 2 cannot advance: refused, not looped on.
        assert_eq!(dimensions(&[0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01]), None);
    }
}
