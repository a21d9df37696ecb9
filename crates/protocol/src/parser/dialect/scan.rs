//! Finding markers in text that arrives in pieces.

/// A set of markers searched together. At one position the longest marker wins.
#[derive(Debug)]
pub(crate) struct Markers {
    list: Vec<&'static [u8]>,
    /// The distinct first bytes of the markers.
    firsts: Vec<u8>,
    /// `starts[b]`: whether a marker starts with byte `b` (one load per byte on the hot path).
    starts: [bool; 256],
}

/// What a scan found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Found {
    /// Marker `index` occupies `start..start + len`.
    Marker {
        start: usize,
        index: usize,
    },
    /// From `start` to the end the bytes may still become a marker: hold them.
    Undecided {
        start: usize,
    },
    None,
}

impl Markers {
    pub(crate) fn new(list: &[&'static str]) -> Self {
        let list: Vec<&'static [u8]> = list.iter().map(|m| m.as_bytes()).collect();
        let mut firsts: Vec<u8> = list.iter().filter_map(|m| m.first().copied()).collect();
        firsts.sort_unstable();
        firsts.dedup();
        let mut starts = [false; 256];
        for &b in &firsts {
            starts[usize::from(b)] = true;
        }
        Markers {
            list,
            firsts,
            starts,
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub(crate) fn list(&self) -> &[&'static [u8]] {
        &self.list
    }

    pub(crate) fn marker(&self, index: usize) -> &'static [u8] {
        self.list[index]
    }

    /// The length of the longest proper, non-empty prefix of a marker that `text` ends with.
    pub(crate) fn cut_len(&self, text: &[u8]) -> usize {
        self.list
            .iter()
            .map(|m| cut_len(text, m))
            .max()
            .unwrap_or(0)
    }

    /// A marker that `prefix` is a proper prefix of.
    pub(crate) fn prefixed_by(&self, prefix: &[u8]) -> Option<&'static [u8]> {
        self.list
            .iter()
            .copied()
            .find(|m| m.len() > prefix.len() && m.starts_with(prefix))
    }

    /// The distinct first bytes of the markers.
    pub(crate) fn first_bytes(&self) -> &[u8] {
        &self.firsts
    }

    /// Whether `marker` is one of the markers.
    pub(crate) fn has(&self, marker: &[u8]) -> bool {
        self.list.contains(&marker)
    }

    /// Whether a marker starts with bytes `a`, `b`.
    pub(crate) fn starts_with_pair(&self, a: u8, b: u8) -> bool {
        self.list.iter().any(|m| m.starts_with(&[a, b]))
    }

    /// Whether a marker starts with byte `b`.
    pub(crate) fn may_start_with(&self, b: u8) -> bool {
        self.starts[usize::from(b)]
    }

    /// The next position that could start a marker.
    #[inline]
    fn candidate(&self, hay: &[u8]) -> Option<usize> {
        match self.firsts.as_slice() {
            [] => None,
            [a] => memchr::memchr(*a, hay),
            [a, b] => memchr::memchr2(*a, *b, hay),
            [a, b, c] => memchr::memchr3(*a, *b, *c, hay),
            _ => hay.iter().position(|&b| self.starts[usize::from(b)]),
        }
    }

    /// The earliest marker in `bytes`. With `at_end` false, more bytes may follow, so a tail that
    /// is a proper prefix of a marker (or could still grow into a longer one) is undecided.
    pub(crate) fn scan(&self, bytes: &[u8], at_end: bool) -> Found {
        let mut pos = 0;
        while let Some(off) = self.candidate(&bytes[pos..]) {
            let start = pos + off;
            let rest = &bytes[start..];
            let mut best: Option<usize> = None;
            let mut open = false;
            for (index, m) in self.list.iter().enumerate() {
                if rest.starts_with(m) {
                    if best.is_none_or(|b| self.list[b].len() < m.len()) {
                        best = Some(index);
                    }
                } else if !at_end && rest.len() < m.len() && m.starts_with(rest) {
                    open = true;
                }
            }
            if open {
                // A longer marker may still complete here: wait, even if a shorter one matched.
                return Found::Undecided { start };
            }
            if let Some(index) = best {
                return Found::Marker { start, index };
            }
            pos = start + 1;
        }
        Found::None
    }
}

/// The length of the longest proper, non-empty prefix of `marker` that `text` ends with.
pub(crate) fn cut_len(text: &[u8], marker: &[u8]) -> usize {
    (1..marker.len())
        .rev()
        .find(|&k| text.ends_with(&marker[..k]))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_then_longest_and_undecided_tails() {
        let m = Markers::new(&["<a>", "<ab>", "[X]"]);
        assert_eq!(
            m.scan(b"xx<a>y", false),
            Found::Marker { start: 2, index: 0 }
        );
        assert_eq!(
            m.scan(b"x<ab>", false),
            Found::Marker { start: 1, index: 1 }
        );
        assert_eq!(
            m.scan(b"x[X]<a>", false),
            Found::Marker { start: 1, index: 2 }
        );
        assert_eq!(m.scan(b"x<a", false), Found::Undecided { start: 1 });
        assert_eq!(m.scan(b"x<a", true), Found::None);
        assert_eq!(m.scan(b"<<b", false), Found::None);
        assert_eq!(m.scan(b"no marker", false), Found::None);
    }
}
