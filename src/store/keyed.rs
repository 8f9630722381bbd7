//! Table entries found by the 16-byte key they hold ([`keyed_by_its_key!`]):
//! a `HashSet` of them is a map whose slot is the entry alone, not a key
//! beside it. Records and claims of the memory store are both kept so.

/// Implements `Borrow<[u8; 16]>`, `Hash` and `Eq` for an entry type with a
/// `key(&self) -> &[u8; 16]` method, all by that key: the set finds an entry
/// by a key, and hashes it as the key.
macro_rules! keyed_by_its_key {
    ($t:ty) => {
        impl std::borrow::Borrow<[u8; 16]> for $t {
            fn borrow(&self) -> &[u8; 16] {
                self.key()
            }
        }

        impl std::hash::Hash for $t {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                std::hash::Hash::hash(self.key(), h);
            }
        }

        impl PartialEq for $t {
            fn eq(&self, other: &$t) -> bool {
                self.key() == other.key()
            }
        }

        impl Eq for $t {}
    };
}
pub(super) use keyed_by_its_key;
