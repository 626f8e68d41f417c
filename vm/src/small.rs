//! [`Fixed`]: a table whose length is set once per run, kept inside the run (no heap
//! allocation) up to `N` elements: the output slots, step flags and visit counts of
//! small packs cost a run no allocation of their own.

use std::ops::{Deref, DerefMut};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A slice of fixed length, inline up to `N` elements, else boxed. Serialized as a
/// sequence, like the `Vec` it replaces.
#[derive(Clone)]
pub(crate) enum Fixed<T, const N: usize> {
    Inline(u32, [T; N]),
    Heap(Box<[T]>),
}

impl<T: Clone, const N: usize> Fixed<T, N> {
    /// `n` copies of `fill`.
    #[inline]
    pub fn new(n: usize, fill: T) -> Self {
        if n <= N {
            Fixed::Inline(n as u32, std::array::from_fn(|_| fill.clone()))
        } else {
            Fixed::Heap(vec![fill; n].into_boxed_slice())
        }
    }
}

impl<T, const N: usize> Default for Fixed<T, N> {
    fn default() -> Self {
        Fixed::Heap(Box::default())
    }
}

impl<T, const N: usize> From<Vec<T>> for Fixed<T, N> {
    fn from(v: Vec<T>) -> Self {
        Fixed::Heap(v.into_boxed_slice())
    }
}

impl<T, const N: usize> Deref for Fixed<T, N> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Fixed::Inline(n, buf) => &buf[..*n as usize],
            Fixed::Heap(b) => b,
        }
    }
}

impl<T, const N: usize> DerefMut for Fixed<T, N> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        match self {
            Fixed::Inline(n, buf) => &mut buf[..*n as usize],
            Fixed::Heap(b) => b,
        }
    }
}

impl<T: PartialEq, const N: usize> PartialEq for Fixed<T, N> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: std::fmt::Debug, const N: usize> std::fmt::Debug for Fixed<T, N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: Serialize, const N: usize> Serialize for Fixed<T, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Fixed<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<T>::deserialize(d).map(Fixed::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_and_heap_serialize_like_a_vec() {
        let a: Fixed<u64, 4> = Fixed::new(3, 7);
        let b: Fixed<u64, 2> = Fixed::new(3, 7);
        assert!(matches!(a, Fixed::Inline(..)) && matches!(b, Fixed::Heap(_)));
        let v = vec![7u64; 3];
        let bytes = postcard::to_allocvec(&v).unwrap();
        assert_eq!(postcard::to_allocvec(&a).unwrap(), bytes);
        assert_eq!(postcard::to_allocvec(&b).unwrap(), bytes);
        let back: Fixed<u64, 4> = postcard::from_bytes(&bytes).unwrap();
        assert_eq!(back, a);
    }
}
