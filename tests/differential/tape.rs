//! A choice tape: the generators draw every random decision from a list of numbers that
//! proptest generates and shrinks (removing entries, moving them toward 0). Every
//! decision maps 0 to its simplest option, and a tape that runs out reads as zeros, so a
//! shrunk tape gives a smaller pack or script.

/// Reads decisions from a slice of numbers.
pub struct Tape<'a> {
    data: &'a [u32],
    pos: usize,
}

impl<'a> Tape<'a> {
    /// A tape over `data`.
    pub fn new(data: &'a [u32]) -> Self {
        Tape { data, pos: 0 }
    }

    fn next(&mut self) -> u32 {
        let v = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        v
    }

    /// A number in `0..n` (`0` when `n <= 1`).
    pub fn below(&mut self, n: usize) -> usize {
        let v = self.next() as usize;
        if n <= 1 {
            0
        } else {
            v % n
        }
    }

    /// A number in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below((hi - lo + 1) as usize) as u64
    }

    /// A count: in `then` (inclusive bounds) with `percent` percent chance, else in
    /// `otherwise`.
    pub fn count(&mut self, percent: u32, then: (u64, u64), otherwise: (u64, u64)) -> usize {
        let (lo, hi) = if self.chance(percent) {
            then
        } else {
            otherwise
        };
        self.range(lo, hi) as usize
    }

    /// True with probability `percent` / 100 (a zero entry is false).
    pub fn chance(&mut self, percent: u32) -> bool {
        let v = self.next() % 100;
        v >= 100 - percent
    }

    /// An index chosen with the given weights (a zero entry picks index 0).
    pub fn weighted(&mut self, weights: &[u32]) -> usize {
        let total: u32 = weights.iter().sum();
        let mut v = self.next() % total.max(1);
        for (i, w) in weights.iter().enumerate() {
            if v < *w {
                return i;
            }
            v -= w;
        }
        0
    }

    /// One of `items` (which must not be empty).
    pub fn one(&mut self, items: &[&'static str]) -> &'static str {
        items[self.below(items.len())]
    }

    /// One element of `items` (which must not be empty).
    pub fn pick<'b, T>(&mut self, items: &'b [T]) -> &'b T {
        &items[self.below(items.len())]
    }
}
