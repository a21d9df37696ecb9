//! Finding markers in text that arrives in pieces.

/// A set of markers searched together. At one position the longest marker wins.
#[derive(Debug)]
pub(crate) struct Markers {
    list: Vec<&'static [u8]>,
    /// The distinct first bytes of the markers.
    firsts: Vec<u8>,
    /// `starts[b]`: whether a marker starts with byte `b` (one load per byte on the hot path).
    starts: [bool; 256],
    /// What each proper prefix of each marker allows (see [`Markers::held_step`]), made when
    /// first asked: only text that arrives in pieces asks, and a parser is made for every reply.
    steps: Option<Steps>,
}

/// The [`Step`]s of a marker set: marker `i`'s prefix of `n` bytes at `steps[at[i] + n]`.
#[derive(Debug)]
struct Steps {
    steps: Vec<Step>,
    at: Vec<usize>,
}

/// What the byte after a held proper prefix of a marker does, for the bytes other than the
/// marker's own next character, decided once per marker set (see [`Steps`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Step {
    /// An ASCII byte that continues the prefix towards a longer marker (the first marker it is a
    /// proper prefix of then, by index), if any: the prefix and the byte are held.
    pub fork: Option<(u8, usize)>,
    /// Whether a byte that starts no marker and is neither the marker's next character nor
    /// `fork` shows that the prefix is content: no marker is complete in the prefix, none starts
    /// after its first byte, and no other marker continues it.
    pub releases: bool,
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
            steps: None,
        }
    }

    /// The markers with their [`Step`]s made now (for markers that are never mutable).
    pub(crate) fn with_steps(mut self) -> Self {
        self.steps = Some(Steps::new(&self.list, &self.starts));
        self
    }

    /// The [`Step`] of the first `n` bytes of `marker`, one of the markers, when it is the first
    /// marker those bytes are a proper prefix of (the steps are made if need be).
    #[inline]
    pub(crate) fn held_step(&mut self, marker: &[u8], n: usize) -> Option<Step> {
        let index = self.index_of(marker)?;
        let Markers {
            list,
            starts,
            steps,
            ..
        } = self;
        Some(
            steps
                .get_or_insert_with(|| Steps::new(list, starts))
                .step(index, n),
        )
    }

    /// [`Markers::held_step`] for markers whose steps are made ([`Markers::with_steps`]).
    pub(crate) fn made_step(&self, marker: &[u8], n: usize) -> Option<Step> {
        Some(self.steps.as_ref()?.step(self.index_of(marker)?, n))
    }

    /// The index of `marker`, one of the markers (the same slice).
    #[inline]
    fn index_of(&self, marker: &[u8]) -> Option<usize> {
        self.list
            .iter()
            .position(|m| std::ptr::eq(m.as_ptr(), marker.as_ptr()) && m.len() == marker.len())
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

impl Steps {
    #[cold]
    fn new(list: &[&'static [u8]], starts: &[bool; 256]) -> Self {
        let mut steps = Vec::new();
        let mut at = Vec::new();
        for marker in list {
            at.push(steps.len());
            steps.extend((0..marker.len()).map(|n| step_of(list, marker, n, starts)));
        }
        Steps { steps, at }
    }

    /// What the byte after the first `n` bytes of marker `index` does (see [`Step`]), when
    /// `index` is the first marker those bytes are a proper prefix of.
    #[inline]
    fn step(&self, index: usize, n: usize) -> Step {
        self.at
            .get(index)
            .and_then(|&at| self.steps.get(at + n))
            .copied()
            .unwrap_or_default()
    }
}

/// [`Step`] for the first `n` bytes of `marker`, as `Engine::byte_step` decides a byte after them
/// (by the held bytes and the byte alone).
fn step_of(list: &[&'static [u8]], marker: &[u8], n: usize, starts: &[bool; 256]) -> Step {
    let held = &marker[..n];
    // The marker's next character, which the lane wants while it leaves the marker incomplete.
    let width = marker[n..]
        .iter()
        .skip(1)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count()
        + 1;
    let next = &marker[..n + width];
    let wanted = marker.len() > n + width;
    let fork = list
        .iter()
        .enumerate()
        .find(|(_, m)| m.len() > n + 1 && m.starts_with(held) && !m.starts_with(next))
        .and_then(|(index, m)| m[n].is_ascii().then_some((m[n], index)));
    // Every marker that goes on after the prefix goes on with the wanted character or the fork.
    let continued = list.iter().filter(|m| m.len() > n && m.starts_with(held));
    let covered = continued
        .into_iter()
        .all(|m| (wanted && m.starts_with(next)) || fork.is_some_and(|(b, _)| m[n] == b));
    let complete = list.iter().any(|m| m.len() <= n && held.starts_with(m));
    let starts_later = held.iter().skip(1).any(|&b| starts[usize::from(b)]);
    Step {
        fork,
        releases: n > 0 && covered && !complete && !starts_later,
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

    /// A fork goes to the first marker the prefix and the fork byte begin; a prefix releases only
    /// when every marker that goes on after it goes on with the wanted character or the fork, no
    /// marker is complete in it and none starts after its first byte.
    #[test]
    fn steps_fork_and_release_as_the_markers_decide() {
        let step = |list: &[&'static str], i: usize, n: usize| {
            let mut m = Markers::new(list);
            m.held_step(m.list()[i], n)
        };
        let step_of = |fork, releases| Some(Step { fork, releases });
        let forks = ["<|a_x|>", "<|ab|>", "<|a_y|>"];
        // `<|a` goes on with `_` (wanted) or `b` (the fork to `<|ab|>`).
        assert_eq!(step(&forks, 0, 3), step_of(Some((b'b', 1)), true));
        // `<|a_` goes on with `x` (wanted) or `y` (the fork to `<|a_y|>`).
        assert_eq!(step(&forks, 0, 4), step_of(Some((b'y', 2)), true));
        // `<|a_x|` wants the last byte, which may complete the marker: no release.
        assert_eq!(step(&forks, 0, 6), step_of(None, false));
        // Three ways on from `<|`: the third is neither wanted nor the fork, so no release.
        assert_eq!(
            step(&["<|a>", "<|b>", "<|c>"], 0, 2),
            step_of(Some((b'b', 1)), false)
        );
        // A marker complete in the held bytes.
        assert_eq!(step(&["<|", "<|a_x|>"], 1, 3), step_of(None, false));
        // A marker may start after the first held byte.
        assert_eq!(step(&["xx<a", "<q"], 0, 2), step_of(None, false));
        assert_eq!(step(&["xy<a", "<q"], 0, 2), step_of(None, true));
        // `é` wants `｜`, a character.
        assert_eq!(step(&["é｜a"], 0, 2), step_of(None, true));
        // Not one of the markers: the same bytes elsewhere.
        let copy = forks[0].as_bytes().to_vec();
        assert_eq!(Markers::new(&forks).held_step(&copy, 1), None);
    }

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
