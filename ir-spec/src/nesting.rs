//! A depth limit for decoding the recursive IR types.
//!
//! Serde decodes recursively, so a crafted `MODL` of a million nested `not` predicates
//! (one byte each) would exhaust the stack before any check could run. [`Pred`] and
//! [`Bind`] therefore deserialize through [`nested`], which counts the levels open on
//! this thread and refuses to go past [`MAX_NESTING`]. Their serde derives use
//! `remote = "Self"`, which turns the derived code into inherent functions that the
//! trait impls below wrap; the wire format is exactly the derived one.

use std::cell::Cell;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::{Bind, Pred};

/// The deepest nesting of predicates (`not`, `all_of`, `any_of`) and of bound arrays and
/// objects a decoded module may have. Packs are loaded with a depth limit of 128 by
/// default, so lowering never comes near it; a file that does is refused rather than
/// allowed to exhaust the stack.
pub const MAX_NESTING: usize = 256;

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// Set when [`nested`] refused a level: postcard drops custom error messages, so the
    /// artifact decoder asks here to explain a failure.
    static EXCEEDED: Cell<bool> = const { Cell::new(false) };
}

/// Whether a decode on this thread hit [`MAX_NESTING`] since the last call; clears the flag.
pub(crate) fn take_exceeded() -> bool {
    EXCEEDED.with(|e| e.replace(false))
}

/// Closes one level when dropped, on success, error or unwind alike.
struct Level;

impl Drop for Level {
    fn drop(&mut self) {
        DEPTH.with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Runs `f` one level deeper, or fails when that is past [`MAX_NESTING`].
fn nested<'de, D, T>(d: D, f: impl FnOnce(D) -> Result<T, D::Error>) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    let depth = DEPTH.with(|c| {
        c.set(c.get() + 1);
        c.get()
    });
    let _level = Level;
    if depth > MAX_NESTING {
        EXCEEDED.with(|e| e.set(true));
        return Err(D::Error::custom(format!(
            "predicates or bindings nested deeper than {MAX_NESTING} levels"
        )));
    }
    f(d)
}

/// `Serialize` as derived, `Deserialize` through [`nested`], for each recursive type.
macro_rules! nested_serde {
    ($($t:ident),*) => {$(
        impl Serialize for $t {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                $t::serialize(self, s)
            }
        }

        impl<'de> Deserialize<'de> for $t {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                nested(d, $t::deserialize)
            }
        }
    )*};
}

nested_serde!(Pred, Bind);
