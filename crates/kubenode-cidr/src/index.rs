use std::collections::HashMap;

use crate::trie::Trie;
use crate::{prefix_contains_ip, Addr, Family, Prefix};

#[derive(Debug, Clone)]
struct Entry {
    name: String,
    /// The object's CIDRs that parse, in order; unparsable ones are skipped as upstream does.
    prefixes: Vec<Prefix>,
}

/// ServiceCIDR names indexed by their CIDRs. Every query gives the same set as upstream's
/// `pkg/api/servicecidr` scan over all ServiceCIDRs, in O(prefix bits) plus the output size.
#[derive(Debug, Clone)]
pub struct CidrIndex {
    by_name: HashMap<String, u32>,
    entries: Vec<Option<Entry>>,
    free_ids: Vec<u32>,
    v4: Trie,
    v6: Trie,
}

impl Default for CidrIndex {
    fn default() -> Self {
        Self::new()
    }
}

impl CidrIndex {
    pub fn new() -> Self {
        CidrIndex {
            by_name: HashMap::new(),
            entries: Vec::new(),
            free_ids: Vec::new(),
            v4: Trie::new(),
            v6: Trie::new(),
        }
    }

    fn trie(&self, f: Family) -> &Trie {
        match f {
            Family::V4 => &self.v4,
            Family::V6 => &self.v6,
        }
    }

    fn trie_mut(&mut self, f: Family) -> &mut Trie {
        match f {
            Family::V4 => &mut self.v4,
            Family::V6 => &mut self.v6,
        }
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }

    /// Sets the CIDRs of `name` (replacing earlier ones). Returns the CIDRs that were skipped
    /// because they do not parse.
    pub fn upsert<S: AsRef<str>>(&mut self, name: &str, cidrs: &[S]) -> Vec<String> {
        self.remove(name);
        let mut prefixes = Vec::with_capacity(cidrs.len());
        let mut skipped = Vec::new();
        for c in cidrs {
            match Prefix::parse(c.as_ref()) {
                Ok(p) => prefixes.push(p),
                Err(_) => skipped.push(c.as_ref().to_string()),
            }
        }
        let id = match self.free_ids.pop() {
            Some(id) => id,
            None => {
                self.entries.push(None);
                (self.entries.len() - 1) as u32
            }
        };
        for p in &prefixes {
            self.trie_mut(p.family()).insert(p, id);
        }
        if let Some(slot) = self.entries.get_mut(id as usize) {
            *slot = Some(Entry {
                name: name.to_string(),
                prefixes,
            });
        }
        self.by_name.insert(name.to_string(), id);
        skipped
    }

    /// Forgets `name`; true if it was present.
    pub fn remove(&mut self, name: &str) -> bool {
        let Some(id) = self.by_name.remove(name) else {
            return false;
        };
        let entry = self.entries.get_mut(id as usize).and_then(Option::take);
        if let Some(e) = entry {
            for p in &e.prefixes {
                self.trie_mut(p.family()).remove(p, id);
            }
        }
        self.free_ids.push(id);
        true
    }

    pub fn has(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    /// The parsable prefixes stored for `name`.
    pub fn prefixes(&self, name: &str) -> Option<&[Prefix]> {
        let id = *self.by_name.get(name)?;
        self.entries
            .get(id as usize)?
            .as_ref()
            .map(|e| e.prefixes.as_slice())
    }

    pub(crate) fn id_of(&self, name: &str) -> Option<u32> {
        self.by_name.get(name).copied()
    }

    fn name_of(&self, id: u32) -> Option<&str> {
        self.entries
            .get(id as usize)?
            .as_ref()
            .map(|e| e.name.as_str())
    }

    /// Ids of every stored CIDR that `PrefixContainsIP(cidr, ip)`, one per matching CIDR.
    pub(crate) fn containing_ids(&self, ip: Addr) -> Vec<u32> {
        let mut out = Vec::new();
        let bits = ip.bits128();
        let len = ip.family().bit_len();
        self.trie(ip.family()).walk_path(ip, len, |d, ids| {
            // Every id at this node shares the prefix (ip masked to d bits).
            let p = match ip {
                Addr::V4(_) => Prefix::new(Addr::V4((bits >> 96) as u32), d),
                Addr::V6(_) => Prefix::new(Addr::V6(bits), d),
            };
            if p.is_some_and(|p| prefix_contains_ip(&p, ip)) {
                out.extend_from_slice(ids);
            }
        });
        out
    }

    /// Ids of every stored CIDR that equals or encloses `p` (upstream `ContainsPrefix`).
    pub(crate) fn enclosing_ids(&self, p: &Prefix) -> Vec<u32> {
        let mut out = Vec::new();
        self.trie(p.family())
            .walk_path(p.masked().addr(), p.bits(), |_, ids| {
                out.extend_from_slice(ids)
            });
        out
    }

    /// Ids of every stored CIDR that shares an address with `p` (upstream `OverlapsPrefix`).
    pub(crate) fn overlapping_ids(&self, p: &Prefix) -> Vec<u32> {
        let mut out = self.enclosing_ids(p);
        self.trie(p.family())
            .walk_below(p, |ids| out.extend_from_slice(ids));
        out
    }

    pub(crate) fn names(&self, mut ids: Vec<u32>) -> Vec<String> {
        ids.sort_unstable();
        ids.dedup();
        let mut names: Vec<String> = ids
            .into_iter()
            .filter_map(|i| self.name_of(i).map(str::to_string))
            .collect();
        names.sort_unstable();
        names
    }

    /// Names of the ServiceCIDRs containing `ip` (network and IPv4 broadcast addresses excluded),
    /// sorted.
    pub fn containing(&self, ip: Addr) -> Vec<String> {
        self.names(self.containing_ids(ip))
    }

    /// Names of the ServiceCIDRs with a CIDR equal to or enclosing `p`, sorted.
    pub fn containing_prefix(&self, p: &Prefix) -> Vec<String> {
        self.names(self.enclosing_ids(p))
    }

    /// Names of the ServiceCIDRs with a CIDR overlapping `p`, sorted.
    pub fn overlapping(&self, p: &Prefix) -> Vec<String> {
        self.names(self.overlapping_ids(p))
    }

    /// Number of live trie nodes over both families.
    pub fn node_count(&self) -> usize {
        self.v4.live_nodes() + self.v6.live_nodes()
    }
}
