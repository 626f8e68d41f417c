//! Character index → byte offset.
//!
//! saphyr's `Marker::index()` counts characters (a BOM and each half of `\r\n` count as
//! one each), while spans and diagnostics use byte offsets. ASCII text needs no table; other
//! text keeps the byte offset of every 64th character and walks at most 63 characters from
//! there, so each lookup is O(1) and the table is 1/8 of the text's size at most. Events
//! come in nearly increasing order, so a lookup shortly after the previous one walks on
//! from it instead.

use std::cell::Cell;

/// Converts saphyr's character indices into byte offsets of one text.
pub(super) struct Offsets<'t> {
    text: &'t str,
    /// Byte offset of characters 0, 64, 128, ...; `None` when the text is ASCII.
    checkpoints: Option<Vec<usize>>,
    /// The last lookup: (character index, byte offset).
    last: Cell<(usize, usize)>,
}

const STRIDE: usize = 64;

impl<'t> Offsets<'t> {
    /// The table for `text`.
    pub(super) fn new(text: &'t str) -> Offsets<'t> {
        let checkpoints = if text.is_ascii() {
            None
        } else {
            Some(
                text.char_indices()
                    .step_by(STRIDE)
                    .map(|(byte, _)| byte)
                    .collect(),
            )
        };
        Offsets {
            text,
            checkpoints,
            last: Cell::new((0, 0)),
        }
    }

    /// The byte offset of character `index`, or the text's length past its end.
    pub(super) fn byte(&self, index: usize) -> usize {
        let len = self.text.len();
        let Some(checkpoints) = &self.checkpoints else {
            return index.min(len);
        };
        let (last_index, last_byte) = self.last.get();
        let (from_index, from_byte) = match index.checked_sub(last_index) {
            Some(ahead) if ahead < STRIDE => (last_index, last_byte),
            _ => match checkpoints.get(index / STRIDE) {
                Some(&byte) => (index - index % STRIDE, byte),
                None => return len,
            },
        };
        let byte = advance(self.text.as_bytes(), from_byte, index - from_index);
        self.last.set((index, byte));
        byte
    }

    /// The byte range of the one character starting at byte `at` (empty at the end).
    pub(super) fn point(&self, at: usize) -> std::ops::Range<usize> {
        let width = self
            .text
            .get(at..)
            .and_then(|rest| rest.chars().next())
            .map_or(0, char::len_utf8);
        at..at + width
    }
}

/// The byte offset `chars` characters after byte offset `byte` (a character boundary).
fn advance(bytes: &[u8], mut byte: usize, chars: usize) -> usize {
    for _ in 0..chars {
        if byte >= bytes.len() {
            return bytes.len();
        }
        byte += 1;
        while bytes.get(byte).is_some_and(|b| b & 0xC0 == 0x80) {
            byte += 1;
        }
    }
    byte.min(bytes.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_char_indices_in_any_order() {
        let text = "aé中🎉\r\n".repeat(50);
        let naive: Vec<usize> = text
            .char_indices()
            .map(|(b, _)| b)
            .chain([text.len(); 3])
            .collect();
        let offsets = Offsets::new(&text);
        let order = (0..naive.len())
            .chain((0..naive.len()).rev())
            .chain((0..naive.len()).map(|i| (i * 37) % naive.len()));
        for i in order {
            assert_eq!(offsets.byte(i), naive[i], "char {i}");
        }
        assert_eq!(offsets.byte(usize::MAX), text.len());
        assert_eq!(Offsets::new("abc").byte(7), 3);
        assert_eq!(offsets.point(1), 1..3);
        assert_eq!(offsets.point(text.len()), text.len()..text.len());
    }
}
