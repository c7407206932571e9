//! A binary trie over address bits, one per family. A node at depth `d` stands for the masked
//! prefix of length `d` on its path and holds the ids stored at exactly that prefix. Nodes live
//! in an arena; emptied branches are pruned and their slots reused.

use crate::{Addr, Prefix};

const NONE: u32 = u32::MAX;

#[derive(Debug, Clone)]
struct Node {
    child: [u32; 2],
    /// Ids stored at this prefix (an id may repeat if one object lists a prefix twice).
    ids: Vec<u32>,
}

impl Node {
    fn empty() -> Self {
        Node {
            child: [NONE, NONE],
            ids: Vec::new(),
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Trie {
    nodes: Vec<Node>,
    free: Vec<u32>,
}

impl Trie {
    pub(crate) fn new() -> Self {
        Trie {
            nodes: vec![Node::empty()],
            free: Vec::new(),
        }
    }

    fn node(&self, i: u32) -> Option<&Node> {
        self.nodes.get(i as usize)
    }

    fn alloc(&mut self) -> u32 {
        if let Some(i) = self.free.pop() {
            if let Some(n) = self.nodes.get_mut(i as usize) {
                *n = Node::empty();
            }
            return i;
        }
        self.nodes.push(Node::empty());
        (self.nodes.len() - 1) as u32
    }

    pub(crate) fn insert(&mut self, p: &Prefix, id: u32) {
        let addr = p.masked().addr();
        let mut cur = 0u32;
        for d in 0..p.bits() {
            let b = addr.bit(d);
            let next = self.node(cur).map_or(NONE, |n| n.child[b]);
            cur = if next == NONE {
                let fresh = self.alloc();
                if let Some(n) = self.nodes.get_mut(cur as usize) {
                    n.child[b] = fresh;
                }
                fresh
            } else {
                next
            };
        }
        if let Some(n) = self.nodes.get_mut(cur as usize) {
            n.ids.push(id);
        }
    }

    /// Removes one occurrence of `id` at `p`, then prunes nodes left with no ids and no children.
    pub(crate) fn remove(&mut self, p: &Prefix, id: u32) {
        let addr = p.masked().addr();
        let mut path = Vec::with_capacity(usize::from(p.bits()) + 1);
        let mut cur = 0u32;
        path.push(cur);
        for d in 0..p.bits() {
            match self.node(cur).map(|n| n.child[addr.bit(d)]) {
                Some(next) if next != NONE => {
                    cur = next;
                    path.push(cur);
                }
                _ => return,
            }
        }
        if let Some(n) = self.nodes.get_mut(cur as usize) {
            if let Some(pos) = n.ids.iter().position(|&x| x == id) {
                n.ids.swap_remove(pos);
            }
        }
        // Walk back up, unlinking dead leaves; the root (path[0]) is never freed.
        for d in (1..path.len()).rev() {
            let (Some(&i), Some(&parent)) = (path.get(d), path.get(d - 1)) else {
                break;
            };
            let dead = self
                .node(i)
                .is_some_and(|n| n.ids.is_empty() && n.child == [NONE, NONE]);
            if !dead {
                break;
            }
            let b = addr.bit((d - 1) as u8);
            if let Some(pn) = self.nodes.get_mut(parent as usize) {
                pn.child[b] = NONE;
            }
            if let Some(n) = self.nodes.get_mut(i as usize) {
                n.ids = Vec::new();
            }
            self.free.push(i);
        }
    }

    /// Calls `f(depth, ids)` for every non-empty node on the path of `addr`, from the root down
    /// to depth `max_depth` inclusive.
    pub(crate) fn walk_path(&self, addr: Addr, max_depth: u8, mut f: impl FnMut(u8, &[u32])) {
        let mut cur = 0u32;
        let mut d = 0u8;
        loop {
            let Some(n) = self.node(cur) else { return };
            if !n.ids.is_empty() {
                f(d, &n.ids);
            }
            if d >= max_depth {
                return;
            }
            let next = n.child[addr.bit(d)];
            if next == NONE {
                return;
            }
            cur = next;
            d += 1;
        }
    }

    /// Calls `f(ids)` for every non-empty node strictly below the node of `p` (if it exists).
    pub(crate) fn walk_below(&self, p: &Prefix, mut f: impl FnMut(&[u32])) {
        let addr = p.masked().addr();
        let mut cur = 0u32;
        for d in 0..p.bits() {
            match self.node(cur).map(|n| n.child[addr.bit(d)]) {
                Some(next) if next != NONE => cur = next,
                _ => return,
            }
        }
        let mut stack: Vec<u32> = self.node(cur).map(|n| n.child.to_vec()).unwrap_or_default();
        while let Some(i) = stack.pop() {
            if i == NONE {
                continue;
            }
            if let Some(n) = self.node(i) {
                if !n.ids.is_empty() {
                    f(&n.ids);
                }
                stack.extend_from_slice(&n.child);
            }
        }
    }

    /// Live nodes (for tests and memory accounting).
    pub(crate) fn live_nodes(&self) -> usize {
        self.nodes.len() - self.free.len()
    }
}
