//! A sans-IO decoder for server-sent events (the `text/event-stream` format of the WHATWG HTML
//! standard), as OpenAI-compatible and Anthropic servers stream responses.
//!
//! Push bytes in, take complete events out. Lines may end in `\n`, `\r\n` or `\r`, split anywhere
//! across chunks. Memory is bounded: an event larger than the limit is an error.

use thiserror::Error;

/// One dispatched event.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, when the server sent one.
    pub event: Option<String>,
    /// The `data:` lines, joined by `\n`.
    pub data: String,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum SseError {
    #[error("server-sent event larger than {0} bytes")]
    TooLarge(usize),
}

/// The decoder.
#[derive(Debug)]
pub struct SseDecoder {
    line: Vec<u8>,
    event: Option<String>,
    data: String,
    has_data: bool,
    /// The previous chunk ended with `\r`: a `\n` at the start of the next belongs to it.
    after_cr: bool,
    started: bool,
    max_event_bytes: usize,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(16 << 20)
    }
}

impl SseDecoder {
    pub fn new(max_event_bytes: usize) -> Self {
        SseDecoder {
            line: Vec::new(),
            event: None,
            data: String::new(),
            has_data: false,
            after_cr: false,
            started: false,
            max_event_bytes,
        }
    }

    /// Pushes bytes; complete events are appended to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.started && !bytes.is_empty() {
            self.started = true;
            if let Some(rest) = bytes.strip_prefix(b"\xEF\xBB\xBF".as_slice()) {
                bytes = rest;
            }
        }
        if self.after_cr {
            self.after_cr = false;
            if let Some(rest) = bytes.strip_prefix(b"\n".as_slice()) {
                bytes = rest;
            }
        }
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', bytes) {
            self.line.extend_from_slice(&bytes[..pos]);
            let cr = bytes[pos] == b'\r';
            bytes = &bytes[pos + 1..];
            if cr {
                match bytes.first() {
                    Some(b'\n') => bytes = &bytes[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out)?;
            self.line = line;
            self.line.clear();
        }
        self.line.extend_from_slice(bytes);
        if self.line.len() + self.data.len() > self.max_event_bytes {
            return Err(SseError::TooLarge(self.max_event_bytes));
        }
        Ok(())
    }

    /// Ends the stream. A last event without its blank line is still dispatched (servers that
    /// close right after `data: [DONE]` are common).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.take_line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn take_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(()); // comment (keep-alive)
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ".as_slice()).unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&String::from_utf8_lossy(value));
                self.has_data = true;
                if self.data.len() > self.max_event_bytes {
                    return Err(SseError::TooLarge(self.max_event_bytes));
                }
            }
            b"event" => self.event = Some(String::from_utf8_lossy(value).into_owned()),
            _ => {} // id, retry and unknown fields are not used
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent {
                event: self.event.take(),
                data: std::mem::take(&mut self.data),
            });
        }
        self.event = None;
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut d = SseDecoder::default();
        let mut out = Vec::new();
        for c in chunks {
            d.push(c, &mut out).unwrap();
        }
        d.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn events_are_the_same_for_every_split() {
        let text: &[u8] = b"\xEF\xBB\xBF: keep-alive\r\nevent: message_start\r\ndata: {\"a\":1}\r\n\r\ndata: x\rdata:  y\r\rdata: [DONE]\n\n";
        let whole = decode_chunks(&[text]);
        assert_eq!(
            whole,
            vec![
                SseEvent {
                    event: Some("message_start".into()),
                    data: "{\"a\":1}".into()
                },
                SseEvent {
                    event: None,
                    data: "x\n y".into()
                },
                SseEvent {
                    event: None,
                    data: "[DONE]".into()
                },
            ]
        );
        for cut in 0..text.len() {
            assert_eq!(
                decode_chunks(&[&text[..cut], &text[cut..]]),
                whole,
                "cut at {cut}"
            );
        }
        let singles: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(decode_chunks(&singles), whole);
    }

    #[test]
    fn last_event_without_blank_line_is_dispatched() {
        assert_eq!(decode_chunks(&[b"data: [DONE]"]).len(), 1);
    }

    #[test]
    fn oversized_events_are_an_error() {
        let mut d = SseDecoder::new(10);
        let mut out = Vec::new();
        assert_eq!(
            d.push(b"data: 0123456789abc", &mut out),
            Err(SseError::TooLarge(10))
        );
    }
}
