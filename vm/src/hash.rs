//! FNV-1a, 64 bits: the module fingerprint a snapshot names its program by, and the
//! checksum that closes a snapshot. Tiny and stable across platforms and Rust versions;
//! it catches mistakes (another module, a damaged file), not an adversary.

use ir_spec::Module;

/// FNV-1a, 64 bits: tiny and stable across platforms and Rust versions.
#[derive(Clone, Copy)]
struct Fnv(u64);

impl Fnv {
    const fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

impl postcard::ser_flavors::Flavor for Fnv {
    type Output = u64;

    fn try_extend(&mut self, data: &[u8]) -> postcard::Result<()> {
        self.write(data);
        Ok(())
    }

    fn try_push(&mut self, data: u8) -> postcard::Result<()> {
        self.write(&[data]);
        Ok(())
    }

    fn finalize(self) -> postcard::Result<u64> {
        Ok(self.0)
    }
}

pub(crate) fn fnv(bytes: &[u8]) -> u64 {
    let mut h = Fnv::new();
    h.write(bytes);
    h.0
}

/// The module's fingerprint: FNV-1a 64 of its postcard encoding, hashed as written.
pub fn fingerprint(module: &Module) -> u64 {
    // Postcard fails only on a full fixed buffer (this flavor has none), on sequences of
    // unknown length (the IR has none) and on custom errors (the IR's JSON values are
    // written as text, which cannot fail).
    postcard::serialize_with_flavor(&(module, &module.spec, module.guards()), Fnv::new())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv_matches_the_reference_vectors() {
        assert_eq!(fnv(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv(b"a"), 0xaf63_dc4c_8601_ec8c);
    }
}
