//! Numbers in the text form: ECMAScript `Number::toString`, written or only measured.

use std::fmt::Write as _;

use serde_json::Number;

use super::Sink;

/// A JSON number as ECMAScript prints it.
pub(super) fn write_number<S: Sink + ?Sized>(out: &mut S, n: &Number) {
    if let (Some(m), Some(x)) = (out.as_meter(), n.as_f64()) {
        m.len = m.len.saturating_add(js_number_len(x));
        return;
    }
    match n.as_f64() {
        Some(x) => write_js_number(out, x),
        // Only reachable if serde_json's `arbitrary_precision` is enabled and the number
        // does not fit a double; its own text is the best we have.
        None => out.push_str(&n.to_string()),
    }
}

/// ECMAScript `Number::toString(x)` (ECMA-262 §6.1.6.1.20) for radix 10.
///
/// With `x = s × 10^(n−k)`, where `s` has `k` digits and `k` is as small as possible
/// (the shortest digits that round-trip, which Rust's `{:e}` also produces):
/// - `k ≤ n ≤ 21`: the digits then `n − k` zeros (`1e20` → `100000000000000000000`);
/// - `0 < n ≤ 21`: a point after `n` digits (`2.5`);
/// - `−6 < n ≤ 0`: `0.`, `−n` zeros, the digits (`0.000001`);
/// - otherwise exponent form, `d[.ddd]e±(n−1)` (`1e+21`, `1.5e-7`).
pub(super) fn write_js_number<S: Sink + ?Sized>(out: &mut S, x: f64) {
    if x == 0.0 {
        // Both zeros print as `0`.
        out.push('0');
        return;
    }
    if !x.is_finite() {
        // `JSON.stringify` prints these as `null`; serde_json never holds them.
        out.push_str("null");
        return;
    }
    if x < 0.0 {
        out.push('-');
    }
    // The shortest round-tripping digits, without their point and the zeros around
    // them, printed on the stack. Rust's `{:e}` picks the closest of them as
    // ECMAScript does (a meter only needs their number and exponent: `js_number_len`).
    let mut sci = StackText::default();
    let _ = write!(sci, "{:e}", x.abs());
    let (digits, n) = digits_of(sci.as_str());
    let digits = digits.as_str();
    let (first, rest) = digits.split_at(1.min(digits.len()));
    let k = i32::try_from(digits.len()).unwrap_or(i32::MAX);
    let zeros = |out: &mut S, count: i32| {
        for _ in 0..count {
            out.push('0');
        }
    };
    if k <= n && n <= 21 {
        out.push_str(first);
        out.push_str(rest);
        zeros(out, n - k);
    } else if 0 < n && n <= 21 {
        // `first` is one digit and `n < k`, so the point falls inside `rest`.
        let (int, frac) = rest.split_at(usize::try_from(n - 1).unwrap_or(0).min(rest.len()));
        out.push_str(first);
        out.push_str(int);
        out.push('.');
        out.push_str(frac);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        zeros(out, -n);
        out.push_str(first);
        out.push_str(rest);
    } else {
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        out.push('e');
        out.push(if n - 1 < 0 { '-' } else { '+' });
        let mut buf = StackText::default();
        let _ = write!(buf, "{}", (n - 1).unsigned_abs());
        out.push_str(buf.as_str());
    }
}

/// The length of `x` as [`write_js_number`] prints it, from the number `k` of its
/// shortest digits and their exponent `n`, found by `zmij` without building anything.
pub(super) fn js_number_len(x: f64) -> usize {
    if x == 0.0 {
        return 1;
    }
    if !x.is_finite() {
        return 4;
    }
    let (k, n) = short_decimal(x.abs())
        .unwrap_or_else(|| digit_count_of(zmij::Buffer::new().format_finite(x.abs())));
    let n_len = usize::try_from(n).unwrap_or(0);
    let body = if k <= n_len && 0 < n && n <= 21 {
        n_len
    } else if 0 < n && n <= 21 {
        k + 1
    } else if -6 < n && n <= 0 {
        2 + n.unsigned_abs() as usize + k
    } else {
        let e = (n - 1).unsigned_abs();
        k + usize::from(k > 1) + 2 + e.checked_ilog10().map_or(1, |d| d as usize + 1)
    };
    usize::from(x < 0.0) + body
}

/// `(k, n)` of [`digits_of`] for a positive `x` that is a decimal with at most 8 places
/// and fewer than 16 digits (`0.9`, `2.5`, `1234.75`), found without printing it.
///
/// The first `j` for which `y = round(x·10^j)` divides back to `x` gives the shortest
/// digits: `y·10^-j` rounds to `x` (the division is correctly rounded), and a decimal
/// with fewer places that rounded to `x` would have been found at its own `j`, since
/// `x·10^j` is then within far less than ½ of it.
fn short_decimal(x: f64) -> Option<(usize, i32)> {
    const POW: [f64; 9] = [1.0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8];
    if !(1e-6..1e15).contains(&x) {
        return None;
    }
    for (j, p) in POW.iter().enumerate() {
        let y = (x * p).round();
        if y >= (1u64 << 50) as f64 {
            return None;
        }
        if y >= 1.0 && y / p == x {
            // `y` is a whole number below 2^50: the cast is exact.
            let mut y = y as u64;
            let digits = y.ilog10() as usize + 1;
            let mut zeros = 0;
            while y % 10 == 0 {
                y /= 10;
                zeros += 1;
            }
            let n = i32::try_from(digits).unwrap_or(0) - i32::try_from(j).unwrap_or(0);
            return Some((digits - zeros, n));
        }
    }
    None
}

/// [`digits_of`]'s `(k, n)`, counted in place in one pass over the bytes.
pub(super) fn digit_count_of(printed: &str) -> (usize, i32) {
    let b = printed.as_bytes();
    let e = b
        .iter()
        .position(|c| *c == b'e' || *c == b'E')
        .unwrap_or(b.len());
    let mut exp: i32 = 0;
    let mut negative = false;
    for c in &b[(e + 1).min(b.len())..] {
        match c {
            b'-' => negative = true,
            b'0'..=b'9' => exp = exp.saturating_mul(10).saturating_add(i32::from(c - b'0')),
            _ => {}
        }
    }
    if negative {
        exp = -exp;
    }
    // Over the mantissa's digits: where the point is, the leading zeros, and the
    // digits up to the last nonzero one.
    let (mut point, mut seen, mut lead, mut last_nonzero) = (None, 0usize, 0usize, 0usize);
    for c in &b[..e] {
        match c {
            b'.' => point = Some(seen),
            b'0' if seen == lead => {
                seen += 1;
                lead += 1;
            }
            b'0'..=b'9' => {
                seen += 1;
                if *c != b'0' {
                    last_nonzero = seen;
                }
            }
            _ => {}
        }
    }
    let k = last_nonzero.saturating_sub(lead).max(1);
    let int = i32::try_from(point.unwrap_or(seen)).unwrap_or(0);
    (k, int + exp - i32::try_from(lead).unwrap_or(0))
}

/// The digits `d1…dk` (no leading or trailing zero) and the exponent `n` with
/// `x = 0.d1…dk × 10^n` of a positive number printed as `ddd[.ddd][e±d]`.
pub(super) fn digits_of(printed: &str) -> (StackText, i32) {
    let (mantissa, exp) = printed.split_once(['e', 'E']).unwrap_or((printed, "0"));
    let exp: i32 = exp.trim_start_matches('+').parse().unwrap_or(0);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits = StackText::default();
    let _ = digits.write_str(int);
    let _ = digits.write_str(frac);
    let mut n = i32::try_from(int.len()).unwrap_or(0) + exp;
    let bytes = &digits.bytes[..digits.len];
    let lead = bytes.iter().take_while(|b| **b == b'0').count();
    let end = bytes.len() - bytes.iter().rev().take_while(|b| **b == b'0').count();
    n -= i32::try_from(lead).unwrap_or(0);
    let mut out = StackText::default();
    let _ = out.write_str(std::str::from_utf8(&bytes[lead..end.max(lead)]).unwrap_or("0"));
    (out, n)
}

/// A short text on the stack (a number's digits).
#[derive(Default)]
pub(super) struct StackText {
    bytes: [u8; 32],
    len: usize,
}

impl StackText {
    pub(super) fn as_str(&self) -> &str {
        std::str::from_utf8(&self.bytes[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        let dst = self.bytes.get_mut(self.len..end).ok_or(std::fmt::Error)?;
        dst.copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}
