//! The allowlist's lookup tables. Exact keys live in one byte arena indexed by an open-addressing
//! table whose hash reads the length and three 8-byte windows, so hashing costs the same for every
//! name; prefix keys are bucketed by their first byte. Keys come from node config (no DoS
//! exposure), and a lookup neither allocates nor walks the whole name.

use crate::namespace::Namespace;

const K: u64 = 0x9e37_79b9_7f4a_7c15;

#[inline]
fn word(b: &[u8], at: usize) -> u64 {
    b.get(at..)
        .and_then(|s| s.first_chunk::<8>())
        .map_or(0, |w| u64::from_le_bytes(*w))
}

/// Length plus the first, middle and last 8 bytes (zero-padded below 8 bytes).
#[inline]
fn hash(b: &[u8]) -> u64 {
    let n = b.len();
    let (x, y, z) = if n >= 8 {
        (word(b, 0), word(b, (n - 8) / 2), word(b, n - 8))
    } else {
        let mut w = [0u8; 8];
        if let Some(dst) = w.get_mut(..n) {
            dst.copy_from_slice(b);
        }
        (u64::from_le_bytes(w), 0, 0)
    };
    let h = (x ^ y.rotate_left(21) ^ z.rotate_left(42) ^ n as u64).wrapping_mul(K);
    h ^ (h >> 32)
}

/// Equality of two short byte strings, 8 bytes at a time with an overlapping last word; keys are
/// a few dozen bytes, where a call into libc's memcmp costs more than the comparison.
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    if n < 8 {
        return a == b;
    }
    let mut i = 0;
    while i + 8 < n {
        if word(a, i) != word(b, i) {
            return false;
        }
        i += 8;
    }
    word(a, n - 8) == word(b, n - 8)
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    /// Low 32 bits of the hash; 0 marks an empty slot (real hashes are forced non-zero).
    tag: u32,
    offset: u32,
    len: u32,
    ns: Namespace,
}

const EMPTY: Slot = Slot {
    tag: 0,
    offset: 0,
    len: 0,
    ns: Namespace::Unknown,
};

#[inline]
fn tag_of(h: u64) -> u32 {
    (h as u32) | 1
}

/// Exact keys → namespace. Later inserts of the same key overwrite (Go map semantics).
#[derive(Debug, Clone)]
pub(crate) struct ExactTable {
    arena: Vec<u8>,
    slots: Vec<Slot>,
    mask: usize,
    len: usize,
}

impl ExactTable {
    /// A table for at most `keys.len()` distinct keys, filled in order.
    pub(crate) fn build(keys: &[(String, Namespace)]) -> Self {
        let cap = (keys.len() * 2).next_power_of_two().max(16);
        let mut t = Self {
            arena: Vec::new(),
            slots: vec![EMPTY; cap],
            mask: cap - 1,
            len: 0,
        };
        for (k, ns) in keys {
            t.insert(k.as_bytes(), *ns);
        }
        t
    }

    fn key(&self, s: &Slot) -> &[u8] {
        let start = s.offset as usize;
        self.arena
            .get(start..start + s.len as usize)
            .unwrap_or_default()
    }

    fn insert(&mut self, key: &[u8], ns: Namespace) {
        let h = hash(key);
        let tag = tag_of(h);
        let mut i = (h >> 32) as usize & self.mask;
        loop {
            let s = self.slots.get(i).copied().unwrap_or(EMPTY);
            if s.tag == 0 {
                let offset = self.arena.len() as u32;
                self.arena.extend_from_slice(key);
                if let Some(slot) = self.slots.get_mut(i) {
                    *slot = Slot {
                        tag,
                        offset,
                        len: key.len() as u32,
                        ns,
                    };
                }
                self.len += 1;
                return;
            }
            if s.tag == tag && self.key(&s) == key {
                if let Some(slot) = self.slots.get_mut(i) {
                    slot.ns = ns;
                }
                return;
            }
            i = (i + 1) & self.mask;
        }
    }

    #[inline]
    pub(crate) fn get(&self, key: &[u8]) -> Option<Namespace> {
        let h = hash(key);
        let tag = tag_of(h);
        let mut i = (h >> 32) as usize & self.mask;
        // The table is at most half full, so an empty slot always ends the probe.
        loop {
            let s = self.slots.get(i)?;
            if s.tag == 0 {
                return None;
            }
            if s.tag == tag && same(self.key(s), key) {
                return Some(s.ns);
            }
            i = (i + 1) & self.mask;
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, Namespace)> {
        self.slots
            .iter()
            .filter(|s| s.tag != 0)
            .map(|s| (std::str::from_utf8(self.key(s)).unwrap_or_default(), s.ns))
    }
}

/// Prefix keys → namespace, grouped by first byte (keys are never empty: `*` alone is refused as
/// not namespaced). Within a group, longest first, so the first hit is deterministic;
/// overlapping prefixes share a namespace, so the choice never changes the outcome.
#[derive(Debug, Clone)]
pub(crate) struct PrefixTable {
    keys: Vec<(Box<[u8]>, Namespace)>,
    /// `start[b]..start[b + 1]` are the keys starting with byte `b`. u32: one first byte may
    /// start more than 65,535 keys.
    start: Box<[u32; 257]>,
}

impl PrefixTable {
    pub(crate) fn build(keys: &[(String, Namespace)]) -> Self {
        let mut v: Vec<(Box<[u8]>, Namespace)> = keys
            .iter()
            .map(|(k, ns)| (k.as_bytes().into(), *ns))
            .collect();
        let first = |k: &[u8]| k.first().copied().unwrap_or(0);
        v.sort_by(|a, b| {
            first(&a.0)
                .cmp(&first(&b.0))
                .then(b.0.len().cmp(&a.0.len()))
                .then_with(|| a.0.cmp(&b.0))
        });
        let mut start = Box::new([0u32; 257]);
        for (k, _) in &v {
            if let Some(c) = start.get_mut(usize::from(first(k)) + 1) {
                *c += 1;
            }
        }
        for b in 1..257 {
            start[b] += start[b - 1];
        }
        Self { keys: v, start }
    }

    #[inline]
    pub(crate) fn find(&self, name: &[u8]) -> Option<Namespace> {
        let b = usize::from(*name.first()?);
        let (lo, hi) = (self.start[b] as usize, self.start[b + 1] as usize);
        self.keys
            .get(lo..hi)?
            .iter()
            .find(|(k, _)| name.get(..k.len()).is_some_and(|head| same(head, k)))
            .map(|(_, ns)| *ns)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (&str, Namespace)> {
        self.keys
            .iter()
            .map(|(k, ns)| (std::str::from_utf8(k).unwrap_or_default(), *ns))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `n` generated net keys, then `extra`.
    fn net_keys(
        n: u32,
        key: impl Fn(u32) -> String,
        extra: &[(&str, Namespace)],
    ) -> Vec<(String, Namespace)> {
        (0..n)
            .map(|i| (key(i), Namespace::Net))
            .chain(extra.iter().map(|&(k, ns)| (k.to_string(), ns)))
            .collect()
    }

    #[test]
    fn exact_table_finds_every_key_and_nothing_else() {
        let keys = net_keys(
            300,
            |i| format!("net.ipv4.conf.eth{i}.rp_filter"),
            &[("a", Namespace::Ipc), ("kernel.sem", Namespace::Ipc)],
        );
        let t = ExactTable::build(&keys);
        for (k, ns) in &keys {
            assert_eq!(t.get(k.as_bytes()), Some(*ns), "{k}");
        }
        for miss in [
            "",
            "b",
            "net.ipv4.conf.eth300.rp_filter",
            "kernel.se",
            "kernel.semx",
        ] {
            assert_eq!(t.get(miss.as_bytes()), None, "{miss}");
        }
        assert_eq!(t.iter().count(), keys.len());
    }

    #[test]
    fn exact_table_overwrites_duplicates() {
        let t = ExactTable::build(&[
            ("kernel.sem".into(), Namespace::Ipc),
            ("kernel.sem".into(), Namespace::Uts),
        ]);
        assert_eq!(t.get(b"kernel.sem"), Some(Namespace::Uts));
        assert_eq!(t.iter().count(), 1);
    }

    #[test]
    fn prefix_table_buckets() {
        let t = PrefixTable::build(&[
            ("net.".into(), Namespace::Net),
            ("kernel.msg".into(), Namespace::Ipc),
            ("\u{ff}x".into(), Namespace::User),
        ]);
        assert_eq!(t.find(b"net.core.somaxconn"), Some(Namespace::Net));
        assert_eq!(t.find(b"kernel.msgfoo"), Some(Namespace::Ipc));
        assert_eq!(t.find("\u{ff}xy".as_bytes()), Some(Namespace::User));
        assert_eq!(t.find(b"net"), None);
        assert_eq!(t.find(b""), None);
        assert_eq!(t.find(b"kernel.ms"), None);
    }

    #[test]
    fn prefix_buckets_hold_more_than_65535_keys() {
        let n = 70_000;
        let keys = net_keys(
            n,
            |i| format!("net.a{i}."),
            &[("kernel.msg", Namespace::Ipc), ("o.", Namespace::Uts)],
        );
        let t = PrefixTable::build(&keys);
        assert_eq!(
            t.start[usize::from(b'n') + 1] - t.start[usize::from(b'n')],
            n
        );
        assert_eq!(t.find(b"net.a0.x"), Some(Namespace::Net));
        assert_eq!(t.find(b"net.a69999.x"), Some(Namespace::Net));
        assert_eq!(t.find(b"net.b"), None);
        assert_eq!(t.find(b"o.x"), Some(Namespace::Uts));
        assert_eq!(t.find(b"kernel.msgmax"), Some(Namespace::Ipc));
        assert_eq!(t.iter().count(), keys.len());
    }
}
