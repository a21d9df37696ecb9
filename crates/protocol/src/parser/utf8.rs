//! Byte input: UTF-8 characters split across chunks are held until complete.

/// An incomplete UTF-8 sequence left over from the previous chunk.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Carry {
    bytes: [u8; 4],
    len: u8,
}

impl Carry {
    pub(super) fn pending(&self) -> bool {
        self.len > 0
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

    #[test]
    fn invalid_bytes_become_replacement_characters_whatever_the_split() {
        let text: &[u8] = b"a\xffb\xe6\x97c\xf0\x9f\x8e";
        let whole = run(&[text]);
        assert_eq!(whole, "a\u{FFFD}b\u{FFFD}c\u{FFFD}");
        let singles: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(run(&singles), whole);
    }
}
