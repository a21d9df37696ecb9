//! Byte input: UTF-8 characters split across chunks are held until complete.

/// An incomplete UTF-8 sequence left over from the previous chunk.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Carry {
    bytes: [u8; 4],
    len: u8,
}

/// What one more byte did to the carried character (see [`Carry::push_byte`]).
#[cfg(test)]
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Byte {
    /// It began a multi-byte character.
    Started,
    /// It continued the character, which is still incomplete.
    More,
    /// It completed the character.
    Char(char),
    /// Anything else (ASCII, an invalid byte, or a byte that cannot continue the character):
    /// nothing changed, and [`Carry::decode`] must take the byte.
    Other,
}

/// A lead byte's character width (0: not the lead byte of a multi-byte character) and the range
/// of the character's second byte.
#[inline]
fn lead(b: u8) -> (u8, u8, u8) {
    LEADS[usize::from(b)]
}

static LEADS: [(u8, u8, u8); 256] = {
    let mut t = [(0, 0, 0); 256];
    let mut b = 0xC2;
    while b <= 0xF4 {
        t[b] = match b {
            0xC2..=0xDF => (2, 0x80, 0xBF),
            0xE0 => (3, 0xA0, 0xBF),
            0xED => (3, 0x80, 0x9F),
            0xE1..=0xEF => (3, 0x80, 0xBF),
            0xF0 => (4, 0x90, 0xBF),
            0xF4 => (4, 0x80, 0x8F),
            _ => (4, 0x80, 0xBF),
        };
        b += 1;
    }
    t
};

impl Carry {
    pub(super) fn pending(&self) -> bool {
        self.len > 0
    }

    /// One byte of byte input, without a general decode: [`Carry::start`] with nothing carried,
    /// else [`Carry::continue_with`] (the lane calls those directly).
    #[cfg(test)]
    pub(super) fn push_byte(&mut self, b: u8) -> Byte {
        if self.len == 0 {
            return if self.start(b) {
                Byte::Started
            } else {
                Byte::Other
            };
        }
        match self.continue_with(b) {
            Some(None) => Byte::More,
            Some(Some(c)) => Byte::Char(c),
            None => Byte::Other,
        }
    }

    /// A byte with nothing carried: a lead byte starts a character (true); any other byte
    /// changes nothing (false).
    #[inline(always)]
    pub(super) fn start(&mut self, b: u8) -> bool {
        if lead(b).0 == 0 {
            return false;
        }
        self.bytes[0] = b;
        self.len = 1;
        true
    }

    /// The next byte of the carried character (some bytes are carried): `Some(None)` while the
    /// character stays incomplete, `Some(Some(c))` when `b` completes it (nothing is carried
    /// then), and `None`, with nothing changed, when `b` cannot continue it. [`Carry::push_byte`]
    /// without its dispatch on the result, for the lane's byte path.
    #[inline(always)]
    pub(super) fn continue_with(&mut self, b: u8) -> Option<Option<char>> {
        let len = usize::from(self.len);
        let lead_byte = self.bytes[0];
        let (width, lo, hi) = lead(lead_byte);
        // The second byte's range excludes overlong forms, surrogates and values past U+10FFFF.
        let (lo, hi) = if len == 1 { (lo, hi) } else { (0x80, 0xBF) };
        if b < lo || b > hi {
            return None;
        }
        let width = usize::from(width);
        if len + 1 < width {
            if let Some(slot) = self.bytes.get_mut(len) {
                *slot = b;
            }
            self.len += 1;
            return Some(None);
        }
        let tail = |c: u8| u32::from(c & 0x3F);
        let code = match width {
            2 => (u32::from(lead_byte & 0x1F) << 6) | tail(b),
            3 => (u32::from(lead_byte & 0x0F) << 12) | (tail(self.bytes[1]) << 6) | tail(b),
            _ => {
                (u32::from(lead_byte & 0x07) << 18)
                    | (tail(self.bytes[1]) << 12)
                    | (tail(self.bytes[2]) << 6)
                    | tail(b)
            }
        };
        // Always a char: every byte was in its range.
        let c = char::from_u32(code)?;
        self.len = 0;
        Some(Some(c))
    }

    /// Decodes `input` after the carried bytes, handing complete text to `out`. Invalid bytes
    /// become U+FFFD exactly as `String::from_utf8_lossy` would replace them in the whole text.
    pub(super) fn decode(&mut self, mut input: &[u8], out: &mut dyn FnMut(&str)) {
        // Finish a carried sequence one byte at a time: the carry is a valid prefix, so the first
        // byte that cannot continue it ends it (one U+FFFD) and is read again as new input.
        while self.len > 0 {
            let Some((&b, rest)) = input.split_first() else {
                return;
            };
            let len = self.len as usize;
            self.bytes[len] = b;
            match std::str::from_utf8(&self.bytes[..=len]) {
                Ok(s) => {
                    out(s);
                    self.len = 0;
                    input = rest;
                }
                Err(e) if e.error_len().is_none() => {
                    self.len += 1;
                    input = rest;
                }
                Err(_) => {
                    out("\u{FFFD}");
                    self.len = 0;
                }
            }
        }
        loop {
            match std::str::from_utf8(input) {
                Ok(s) => {
                    if !s.is_empty() {
                        out(s);
                    }
                    return;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    if let Ok(s) = std::str::from_utf8(&input[..valid]) {
                        if !s.is_empty() {
                            out(s);
                        }
                    }
                    match e.error_len() {
                        None => {
                            let tail = &input[valid..];
                            self.bytes[..tail.len()].copy_from_slice(tail);
                            self.len = tail.len() as u8;
                            return;
                        }
                        Some(bad) => {
                            out("\u{FFFD}");
                            input = &input[valid + bad..];
                        }
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(chunks: &[&[u8]]) -> String {
        let mut c = Carry::default();
        let mut s = String::new();
        for ch in chunks {
            c.decode(ch, &mut |t: &str| s.push_str(t));
        }
        if c.pending() {
            s.push('\u{FFFD}');
        }
        s
    }

    #[test]
    fn any_split_of_valid_utf8_decodes_the_same() {
        let text = "aé日🎉z".as_bytes();
        for cut in 0..=text.len() {
            for cut2 in cut..=text.len() {
                assert_eq!(
                    run(&[&text[..cut], &text[cut..cut2], &text[cut2..]]),
                    "aé日🎉z"
                );
            }
        }
        let singles: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(run(&singles), "aé日🎉z");
    }

    /// Byte by byte, [`Carry::push_byte`] first and [`Carry::decode`] for what it leaves, as the
    /// parser does.
    fn run_bytewise(text: &[u8]) -> String {
        let mut c = Carry::default();
        let mut s = String::new();
        for &b in text {
            match c.push_byte(b) {
                Byte::Started | Byte::More => {}
                Byte::Char(ch) => s.push(ch),
                Byte::Other => c.decode(&[b], &mut |t: &str| s.push_str(t)),
            }
        }
        if c.pending() {
            s.push('\u{FFFD}');
        }
        s
    }

    #[test]
    fn push_byte_decodes_as_from_utf8_lossy() {
        // Every sequence of up to three bytes from a set that covers each lead byte class, the
        // bounds of the second byte's ranges, continuation bytes and ASCII.
        let set: [u8; 22] = [
            b'a', 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1,
            0xED, 0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF, 0xC3,
        ];
        let mut seq = Vec::new();
        for &a in &set {
            for &b in &set {
                for &c in &set {
                    for text in [
                        vec![a],
                        vec![a, b],
                        vec![a, b, c],
                        vec![a, b, c, 0xA9, 0x80],
                    ] {
                        seq.clone_from(&text);
                        assert_eq!(
                            run_bytewise(&seq),
                            String::from_utf8_lossy(&seq),
                            "{seq:x?}"
                        );
                    }
                }
            }
        }
        let text = "aé日🎉z\u{10FFFF}\u{FFFF}\u{D7FF}\u{E000}".as_bytes();
        assert_eq!(run_bytewise(text), String::from_utf8_lossy(text));
    }

    #[test]
    fn invalid_bytes_become_replacement_characters_whatever_the_split() {
        let text: &[u8] = b"a\xffb\xe6\x97c\xf0\x9f\x8e";
        let whole = run(&[text]);
        assert_eq!(whole, "a\u{FFFD}b\u{FFFD}c\u{FFFD}");
        let singles: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(run(&singles), whole);
    }
}
