//! Where a word or a literal may occur: a few bytes (the words' or literals' rarest
//! bytes) searched for 32 text bytes a step, with or without ASCII case folding, while
//! the same pass notes whether the text is all ASCII.
//!
//! A step costs two 16-byte loads, an OR each for folding, one compare per needle and
//! vector, and one bit mask (SSE2 on x86-64, NEON on aarch64, portable code elsewhere,
//! through `wide`), so a 200-byte answer is scanned in six steps and a tail. Every
//! candidate position is handed to the caller, which tests it exactly: the scan only
//! has to miss nothing.

use wide::u8x16;

/// The most distinct bytes a [`Needles`] searches for.
const MAX_NEEDLES: usize = 4;

/// Text bytes per vector.
const BLOCK: usize = 16;

/// Text bytes per step of a scan: two vectors, one 32-bit mask.
const STEP: usize = 2 * BLOCK;

/// Where a scan is: the next byte to read, and the non-ASCII bytes seen so far.
struct Cursor {
    at: usize,
    high: u32,
}

/// Up to [`MAX_NEEDLES`] bytes to find.
struct Needles {
    /// Each needle (ORed with `fold`) in every lane; the unused ones repeat the first.
    splat: [u8x16; MAX_NEEDLES],
    /// `0x20` in every lane when ASCII case is folded, else 0: a text byte ORed with it
    /// equals a needle ORed with it when they are the same letter in either case (and,
    /// for some non-letters, when they differ in bit 5 alone: a candidate the caller
    /// rejects).
    fold: u8x16,
    /// How many of `splat` are distinct: the scan compares with these only.
    count: usize,
}

/// What [`Needles::find`] found.
pub(super) enum Scanned<T> {
    /// The caller's test accepted a candidate, with this.
    Hit(T),
    /// No candidate was accepted; `ascii` tells whether every byte of the text is ASCII.
    Miss { ascii: bool },
}

/// Strings found by their rarest bytes: each is compared with the text around every
/// place the scan finds its rarest byte. The words of a `banned_words` list (ignoring
/// ASCII case) and the literals of a `regex` validator both search this way.
pub(super) struct Rare {
    /// The strings' rarest bytes.
    needles: Needles,
    /// Each string, with its rarest byte.
    strings: Box<[RareString]>,
    /// Strings match ignoring ASCII case (they are given lowercased).
    fold: bool,
}

/// A string of a [`Rare`] set.
struct RareString {
    /// Its rarest byte, ORed with `0x20` when case is folded.
    byte: u8,
    /// Where that byte is in `bytes`.
    at: usize,
    /// The string.
    bytes: Box<[u8]>,
}

impl Rare {
    /// The set of `strings` (non-empty; ASCII-lowercased when `fold` holds), or `None`
    /// when their rarest bytes are more than [`MAX_NEEDLES`] distinct ones.
    pub(super) fn new<'a>(strings: impl IntoIterator<Item = &'a [u8]>, fold: bool) -> Option<Rare> {
        let case = if fold { 0x20 } else { 0 };
        let strings: Box<[RareString]> = strings
            .into_iter()
            .map(|bytes| {
                let at = rarest(bytes);
                RareString {
                    byte: bytes[at] | case,
                    at,
                    bytes: bytes.into(),
                }
            })
            .collect();
        let needles = Needles::new(strings.iter().map(|s| s.byte), fold)?;
        Some(Rare {
            needles,
            strings,
            fold,
        })
    }

    /// How many distinct bytes are searched for.
    #[cfg(test)]
    pub(super) fn distinct(&self) -> usize {
        self.needles.distinct()
    }

    /// Calls `found` with the place `start..end` of every occurrence of a string in
    /// `text` (in the order of the places of their rarest bytes) until it returns `Some`.
    pub(super) fn find<T>(
        &self,
        text: &[u8],
        mut found: impl FnMut(usize, usize) -> Option<T>,
    ) -> Scanned<T> {
        let case = if self.fold { 0x20 } else { 0 };
        self.needles.find(text, |p| {
            let byte = text[p] | case;
            for s in self.strings.iter() {
                if s.byte != byte || p < s.at {
                    continue;
                }
                let (start, end) = (p - s.at, p - s.at + s.bytes.len());
                let Some(here) = text.get(start..end) else {
                    continue;
                };
                let equal = if self.fold {
                    here.eq_ignore_ascii_case(&s.bytes)
                } else {
                    *here == *s.bytes
                };
                if let Some(t) = equal.then(|| found(start, end)).flatten() {
                    return Some(t);
                }
            }
            None
        })
    }
}

/// The offset of the rarest byte of non-empty `bytes`, by `memchr`'s byte frequency
/// ranking with JSON's punctuation counted as common: validators read model answers,
/// which are often JSON, and `memchr` ranks `"` rarer than most letters.
fn rarest(bytes: &[u8]) -> usize {
    let json = |b: u8| matches!(b, b'"' | b'{' | b'}' | b'[' | b']' | b':' | b',');
    if !bytes.iter().any(|&b| json(b)) {
        return memchr::arch::all::packedpair::Pair::new(bytes).map_or(0, |p| p.index1().into());
    }
    // A space is the byte `memchr` ranks most common.
    let masked: Vec<u8> = bytes
        .iter()
        .map(|&b| if json(b) { b' ' } else { b })
        .collect();
    memchr::arch::all::packedpair::Pair::new(&masked).map_or(0, |p| p.index1().into())
}

impl Needles {
    /// The distinct values of `bytes` (folded when `fold` holds); `None` when there are
    /// none or more than [`MAX_NEEDLES`].
    fn new(bytes: impl IntoIterator<Item = u8>, fold: bool) -> Option<Needles> {
        let fold = if fold { 0x20 } else { 0 };
        let mut distinct: Vec<u8> = Vec::with_capacity(MAX_NEEDLES);
        for b in bytes {
            let b = b | fold;
            if !distinct.contains(&b) {
                distinct.push(b);
            }
        }
        let first = *distinct.first()?;
        let count = distinct.len();
        if count > MAX_NEEDLES {
            return None;
        }
        distinct.resize(MAX_NEEDLES, first);
        Some(Needles {
            splat: std::array::from_fn(|i| u8x16::splat(distinct[i])),
            fold: u8x16::splat(fold),
            count,
        })
    }

    /// How many distinct bytes are searched for.
    #[cfg(test)]
    fn distinct(&self) -> usize {
        self.count
    }

    /// Calls `hit` with every position of `text` whose byte is a needle, in order, until
    /// it returns `Some`.
    fn find<T>(&self, text: &[u8], hit: impl FnMut(usize) -> Option<T>) -> Scanned<T> {
        match self.count {
            1 => self.find_n::<1, T>(text, hit),
            2 => self.find_n::<2, T>(text, hit),
            3 => self.find_n::<3, T>(text, hit),
            _ => self.find_n::<MAX_NEEDLES, T>(text, hit),
        }
    }

    /// [`Needles::find`] comparing with the first `N` needles.
    #[inline(always)]
    fn find_n<const N: usize, T>(
        &self,
        text: &[u8],
        mut hit: impl FnMut(usize) -> Option<T>,
    ) -> Scanned<T> {
        let mut cursor = Cursor { at: 0, high: 0 };
        while let Some((base, mut mask)) = self.next::<N>(text, &mut cursor) {
            while mask != 0 {
                if let Some(t) = hit(base + mask.trailing_zeros() as usize) {
                    return Scanned::Hit(t);
                }
                mask &= mask - 1;
            }
        }
        Scanned::Miss {
            ascii: cursor.high == 0,
        }
    }

    /// Lanes of `v` equal to one of the first `N` needles, folded.
    #[inline(always)]
    fn equal<const N: usize>(&self, v: u8x16) -> u8x16 {
        let f = v | self.fold;
        let mut m = f.simd_eq(self.splat[0]);
        for n in &self.splat[1..N] {
            m |= f.simd_eq(*n);
        }
        m
    }

    /// The next step of text from the cursor with a candidate: the text offset of its
    /// bit 0 and its candidates (bits past the end or before the cursor cleared).
    /// Moves the cursor past it, noting the non-ASCII bytes of all it reads.
    #[inline(always)]
    fn next<const N: usize>(&self, text: &[u8], cursor: &mut Cursor) -> Option<(usize, u32)> {
        let mut at = cursor.at;
        // Every byte read, ORed: its top bits say whether one was not ASCII.
        let mut high = u8x16::splat(0);
        let load = |block: &[u8]| u8x16::new(block.try_into().unwrap_or([0; BLOCK]));
        let mut found = None;
        for step in text[at..].chunks_exact(STEP) {
            let (a, b) = (load(&step[..BLOCK]), load(&step[BLOCK..]));
            high |= a | b;
            let (ma, mb) = (self.equal::<N>(a), self.equal::<N>(b));
            at += STEP;
            if (ma | mb).to_bitmask() != 0 {
                found = Some((at - STEP, ma.to_bitmask() | mb.to_bitmask() << BLOCK));
                break;
            }
        }
        let found = found.or_else(|| {
            // The rest, under a step: the last step of the text (which may overlap
            // bytes already read), or the text with zeros after it.
            let rest = text.len() - at;
            if rest == 0 {
                return None;
            }
            at = text.len();
            let (base, a, b) = match text.len().checked_sub(STEP) {
                Some(base) => (
                    base,
                    load(&text[base..base + BLOCK]),
                    load(&text[base + BLOCK..]),
                ),
                None => {
                    let mut padded = [0u8; STEP];
                    padded[..text.len()].copy_from_slice(text);
                    (0, load(&padded[..BLOCK]), load(&padded[BLOCK..]))
                }
            };
            high |= a | b;
            let mask = self.equal::<N>(a).to_bitmask() | self.equal::<N>(b).to_bitmask() << BLOCK;
            // Only the bits of the last `rest` bytes of the text are new.
            let end = text.len() - base;
            let below = |k: usize| ((1u64 << k) - 1) as u32;
            let new = below(end) & !below(end - rest);
            let mask = mask & new;
            (mask != 0).then_some((base, mask))
        });
        *cursor = Cursor {
            at,
            high: cursor.high | high.to_bitmask(),
        };
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every position the scan offers, against every position whose byte is a needle.
    fn offered(needles: &Needles, text: &[u8]) -> Vec<usize> {
        let mut seen = Vec::new();
        let miss = needles.find(text, |p| {
            seen.push(p);
            None::<()>
        });
        assert!(matches!(miss, Scanned::Miss { ascii } if ascii == text.is_ascii()));
        seen
    }

    #[test]
    fn rarest_bytes_are_not_json_punctuation() {
        assert_eq!(rarest(br#""type""#), 2);
        assert_eq!(rarest(br#""summary":"#), 7);
        assert!(matches!(rarest(b"{}"), 0 | 1));
        assert_eq!(rarest(b"x"), 0);
    }

    #[test]
    fn offers_exactly_the_needle_positions_in_every_block_and_the_tail() {
        let n = Needles::new(*b"wf", true).unwrap();
        for len in [0, 1, 15, 16, 17, 31, 32, 33, 200] {
            let text: Vec<u8> = (0..len).map(|i| b"aWbFcwdf-x"[i % 10]).collect::<Vec<u8>>();
            let want: Vec<usize> = (0..len)
                .filter(|&i| matches!(text[i] | 0x20, b'w' | b'f'))
                .collect();
            assert_eq!(offered(&n, &text), want, "length {len}");
        }
    }

    #[test]
    fn without_folding_only_the_exact_bytes() {
        let n = Needles::new(*b"y\"", false).unwrap();
        assert_eq!(offered(&n, br#"{"type": "Y"}"#), vec![1, 3, 6, 9, 11]);
    }

    #[test]
    fn notes_non_ascii_bytes_anywhere() {
        let n = Needles::new(*b"q", false).unwrap();
        for at in [0, 15, 16, 40, 41] {
            let mut text = vec![b'a'; 42];
            text[at] = 0xC3;
            assert!(matches!(
                n.find(&text, |_| None::<()>),
                Scanned::Miss { ascii: false }
            ));
        }
        assert!(matches!(n.find(b"abq", Some), Scanned::Hit(2)));
    }

    #[test]
    fn refuses_too_many_or_no_needles() {
        assert!(Needles::new(*b"abcde", false).is_none());
        assert!(Needles::new(*b"aAbBcCdD", true).is_some());
        assert!(Needles::new([], false).is_none());
    }
}
