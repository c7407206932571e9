//! The live flows of the stale-flow protocol (UDP) per (frontend, endpoint) pair, built from a
//! full pass's dump and kept current from ctnetlink events, so a cleanup pass finds every stale
//! flow without walking the table.
//!
//! Upstream's per-flow decision reads only the protocol, the original destination and port and
//! the reply source and port: every flow of one pair is stale or none is. A pass therefore
//! decides each interned pair once and deletes all its flows; deciding on the whole index (not
//! only on what changed) gives exactly the full pass's answer on the flows the index holds,
//! flows that became stale between two passes included. Every flow of the protocol is kept,
//! not only DNATed ones to known frontends: a flow that reached a VIP before its rules existed
//! (reply source = the VIP) or one to a frontend added later is stale too.
//!
//! Per flow only what an exact delete needs is stored: original source address and port, zone
//! and the kernel's ID (0 when the kernel sent none; the delete then goes by tuple alone), in
//! a hash map per interned pair. The maps are keyed with std's randomised hasher: sources are
//! chosen by remote peers.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::hash::Hash;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::event::{EventKind, FlowEvent};
use crate::flow::{DumpFilter, Family, Flow, Tuple};
use crate::stale::StaleMatcher;

/// Why the index of a family cannot answer a pass: the pass is full and rebuilds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resync {
    /// No full pass has built it yet.
    NotBuilt,
    /// The event socket reported lost events (ENOBUFS) or stopped.
    EventsLost,
    /// It held more flows than its cap allows; its memory was released.
    Cap,
}

/// An address of one family, stored as its bytes.
trait Addr: Copy + Eq + Hash + std::fmt::Debug {
    fn of(ip: IpAddr) -> Option<Self>;
    fn ip(self) -> IpAddr;
}

impl Addr for [u8; 4] {
    fn of(ip: IpAddr) -> Option<Self> {
        match ip {
            IpAddr::V4(a) => Some(a.octets()),
            IpAddr::V6(_) => None,
        }
    }
    fn ip(self) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(self))
    }
}

impl Addr for [u8; 16] {
    fn of(ip: IpAddr) -> Option<Self> {
        match ip {
            IpAddr::V6(a) => Some(a.octets()),
            IpAddr::V4(_) => None,
        }
    }
    fn ip(self) -> IpAddr {
        IpAddr::V6(Ipv6Addr::from(self))
    }
}

/// Frontend (original destination and port) and endpoint (reply source and port) of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Pair<A> {
    dst: A,
    dst_port: u16,
    backend: A,
    backend_port: u16,
}

/// The rest of a flow's original tuple: with the pair, what identifies it in the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Source<A> {
    src: A,
    src_port: u16,
    zone: u16,
}

type Flows<A> = HashMap<Source<A>, u32, RandomState>;

/// One family's flows.
#[derive(Debug)]
struct FamilyIndex<A> {
    ids: HashMap<Pair<A>, u32, RandomState>,
    pairs: Vec<(Pair<A>, Flows<A>)>,
    len: usize,
    state: Result<(), Resync>,
    /// A rebuild's dump is running: events apply although the index is not valid yet.
    rebuilding: bool,
    /// Bumped by every loss, so a rebuild that saw one during its dump stays invalid.
    losses: u64,
    hasher: RandomState,
}

impl<A: Addr> FamilyIndex<A> {
    fn new() -> Self {
        let hasher = RandomState::new();
        FamilyIndex {
            ids: HashMap::with_hasher(hasher.clone()),
            pairs: Vec::new(),
            len: 0,
            state: Err(Resync::NotBuilt),
            rebuilding: false,
            losses: 0,
            hasher,
        }
    }

    /// Whether events change it: only while valid or rebuilding (a stale index is rebuilt from
    /// scratch, so updating it would only cost time).
    fn live(&self) -> bool {
        self.state.is_ok() || self.rebuilding
    }

    fn clear(&mut self) {
        self.ids = HashMap::with_hasher(self.hasher.clone());
        self.pairs = Vec::new();
        self.len = 0;
    }

    /// The pair and source of `f`, when it has every address.
    fn split(f: &Flow) -> Option<(Pair<A>, Source<A>)> {
        let pair = Pair {
            dst: A::of(f.orig.dst?)?,
            dst_port: f.orig.dst_port,
            backend: A::of(f.reply.src?)?,
            backend_port: f.reply.src_port,
        };
        let src = Source {
            src: A::of(f.orig.src?)?,
            src_port: f.orig.src_port,
            zone: f.zone,
        };
        Some((pair, src))
    }

    /// Adds or refreshes `f`; false when it had no addresses of this family.
    fn insert(&mut self, f: &Flow) -> bool {
        let Some((pair, src)) = Self::split(f) else {
            return false;
        };
        let i = match self.ids.get(&pair) {
            Some(&i) => i as usize,
            None => {
                let i = self.pairs.len();
                self.ids.insert(pair, i as u32);
                self.pairs
                    .push((pair, HashMap::with_hasher(self.hasher.clone())));
                i
            }
        };
        if let Some((_, flows)) = self.pairs.get_mut(i) {
            if flows.insert(src, f.id.unwrap_or(0)).is_none() {
                self.len += 1;
            }
        }
        true
    }

    fn remove(&mut self, f: &Flow) {
        let Some((pair, src)) = Self::split(f) else {
            return;
        };
        let Some(&i) = self.ids.get(&pair) else {
            return;
        };
        if let Some((_, flows)) = self.pairs.get_mut(i as usize) {
            if flows.remove(&src).is_some() {
                self.len = self.len.saturating_sub(1);
            }
        }
    }

    fn over_cap(&mut self) {
        self.clear();
        self.state = Err(Resync::Cap);
        self.rebuilding = false;
    }

    /// Bytes held, from the maps' capacities (a hashbrown slot is the entry plus one control
    /// byte).
    fn bytes(&self) -> usize {
        let slot = |entry: usize, cap: usize| if cap == 0 { 0 } else { cap * (entry + 1) };
        let flows: usize = self
            .pairs
            .iter()
            .map(|(_, m)| slot(size_of::<(Source<A>, u32)>(), m.capacity()))
            .sum();
        flows
            + self.pairs.capacity() * size_of::<(Pair<A>, Flows<A>)>()
            + slot(size_of::<(Pair<A>, u32)>(), self.ids.capacity())
    }
}

/// What [`FlowIndex::stale`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexedStale {
    /// The stale flows, each with its original tuple, zone and ID (what a delete sends), and
    /// its reply source (what decided it).
    pub flows: Vec<Flow>,
    /// Pairs found stale.
    pub pairs: u32,
    /// Flows the index holds for the family.
    pub indexed: u32,
}

/// The index of both families, for one protocol.
#[derive(Debug)]
pub struct FlowIndex {
    proto: u8,
    max_flows: usize,
    /// False once its feed stopped: it can never be valid again.
    fed: bool,
    v4: FamilyIndex<[u8; 4]>,
    v6: FamilyIndex<[u8; 16]>,
}

/// A token from [`FlowIndex::begin_rebuild`]: the rebuild is valid only if no event was lost
/// since.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rebuild(u64);

macro_rules! on_family {
    ($self:ident, $family:expr, |$f:ident| $body:expr) => {
        match $family {
            Family::V4 => {
                let $f = &mut $self.v4;
                $body
            }
            Family::V6 => {
                let $f = &mut $self.v6;
                $body
            }
        }
    };
}

impl FlowIndex {
    /// An empty index of the flows of protocol `proto`, invalid until a rebuild; it declares
    /// itself invalid (and frees its memory) past `max_flows` flows in all.
    pub fn new(proto: u8, max_flows: usize) -> Self {
        FlowIndex {
            proto,
            max_flows,
            fed: true,
            v4: FamilyIndex::new(),
            v6: FamilyIndex::new(),
        }
    }

    /// The protocol it indexes.
    pub fn proto(&self) -> u8 {
        self.proto
    }

    /// Flows held, both families.
    pub fn len(&self) -> usize {
        self.v4.len + self.v6.len
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes its maps hold, both families (capacity, not only what is used).
    pub fn bytes(&self) -> usize {
        self.v4.bytes() + self.v6.bytes()
    }

    /// Interned (frontend, endpoint) pairs of `family`.
    pub fn pairs(&self, family: Family) -> usize {
        match family {
            Family::V4 => self.v4.pairs.len(),
            Family::V6 => self.v6.pairs.len(),
        }
    }

    /// `Ok` when the index of `family` can answer a pass, else why not.
    pub fn state(&self, family: Family) -> Result<(), Resync> {
        if !self.fed {
            return Err(Resync::EventsLost);
        }
        match family {
            Family::V4 => self.v4.state,
            Family::V6 => self.v6.state,
        }
    }

    /// Its feed stopped: every later pass is full, and the memory is released.
    pub fn unfed(&mut self) {
        self.fed = false;
        self.lost();
        self.v4.clear();
        self.v6.clear();
    }

    /// Events were lost (or the feed stopped): both families need a full pass. Memory is kept
    /// for the rebuild to reuse.
    pub fn lost(&mut self) {
        for st in [&mut self.v4.state, &mut self.v6.state] {
            if *st != Err(Resync::Cap) {
                *st = Err(Resync::EventsLost);
            }
        }
        self.v4.losses += 1;
        self.v6.losses += 1;
    }

    fn check_cap(&mut self) {
        if self.len() > self.max_flows {
            self.v4.over_cap();
            self.v6.over_cap();
        }
    }

    /// Applies one event: NEW and UPDATE add or refresh the flow, DESTROY removes it. Events of
    /// other protocols and of a family over its cap are ignored.
    pub fn apply(&mut self, ev: &FlowEvent) {
        let f = &ev.flow;
        if f.orig.proto != self.proto {
            return;
        }
        let Some(dst) = f.orig.dst.filter(|_| self.fed) else {
            return;
        };
        let family = Family::of(&dst);
        let inserted = on_family!(self, family, |x| {
            if !x.live() {
                return;
            }
            match ev.kind {
                EventKind::New | EventKind::Update => x.insert(f),
                EventKind::Destroy => {
                    x.remove(f);
                    false
                }
            }
        });
        if inserted {
            self.check_cap();
        }
    }

    /// Starts rebuilding `family` from a dump of every flow of the protocol: clears it. Events
    /// keep applying meanwhile (the event socket must be open before the dump starts, so no
    /// flow created during it is missed).
    pub fn begin_rebuild(&mut self, family: Family) -> Rebuild {
        on_family!(self, family, |f| {
            f.clear();
            f.state = Err(Resync::NotBuilt);
            f.rebuilding = true;
            Rebuild(f.losses)
        })
    }

    /// Adds flows a rebuild's dump returned.
    pub fn extend(&mut self, family: Family, flows: &[Flow]) {
        let proto = self.proto;
        on_family!(self, family, |x| {
            if !x.rebuilding {
                return;
            }
            for f in flows.iter().filter(|f| f.orig.proto == proto) {
                x.insert(f);
            }
        });
        self.check_cap();
    }

    /// Ends a rebuild whose dump completed: the index of `family` is valid unless events were
    /// lost since `token` or the cap was reached.
    pub fn finish_rebuild(&mut self, family: Family, token: Rebuild) {
        on_family!(self, family, |f| {
            if f.rebuilding && f.losses == token.0 {
                f.state = Ok(());
            }
            f.rebuilding = false;
        });
    }

    /// Ends a rebuild whose dump failed or stayed partial: `family` stays invalid.
    pub fn abandon_rebuild(&mut self, family: Family) {
        on_family!(self, family, |f| {
            if f.rebuilding {
                f.clear();
                f.rebuilding = false;
            }
        });
    }

    /// Removes flows a pass deleted (their DESTROY events may come later).
    pub fn remove(&mut self, family: Family, flows: &[Flow]) {
        on_family!(self, family, |x| {
            for f in flows {
                x.remove(f);
            }
        });
    }

    /// The flows of `family` that `matcher` calls stale: each pair is decided once, by a flow
    /// made of it, and all its flows taken when it is stale.
    pub fn stale(&mut self, family: Family, matcher: &StaleMatcher) -> IndexedStale {
        let proto = self.proto;
        on_family!(self, family, |x| {
            let mut out = IndexedStale {
                indexed: u32::try_from(x.len).unwrap_or(u32::MAX),
                ..Default::default()
            };
            for (pair, flows) in &x.pairs {
                let probe = pair_flow(proto, pair);
                if flows.is_empty() || !matcher.is_stale(&probe) {
                    continue;
                }
                out.pairs = out.pairs.saturating_add(1);
                out.flows
                    .extend(flows.iter().map(|(s, &id)| with_source(probe, s, id)));
            }
            out
        })
    }

    /// The flows of `family` that `filter` selects (for tests and listings; a pass uses
    /// [`stale`](Self::stale)).
    pub fn matching(&mut self, family: Family, filter: &DumpFilter) -> Vec<Flow> {
        let proto = self.proto;
        if filter.proto.is_some_and(|p| p != proto) {
            return Vec::new();
        }
        on_family!(self, family, |x| {
            let mut out = Vec::new();
            for (pair, flows) in &x.pairs {
                let probe = pair_flow(proto, pair);
                if filter.matches(&probe) {
                    out.extend(flows.iter().map(|(s, &id)| with_source(probe, s, id)));
                }
            }
            out
        })
    }
}

/// A flow of `pair` without its source: enough for the per-flow decision and the filters.
fn pair_flow<A: Addr>(proto: u8, pair: &Pair<A>) -> Flow {
    Flow {
        orig: Tuple {
            src: None,
            dst: Some(pair.dst.ip()),
            proto,
            src_port: 0,
            dst_port: pair.dst_port,
        },
        reply: Tuple {
            src: Some(pair.backend.ip()),
            dst: None,
            proto,
            src_port: pair.backend_port,
            dst_port: 0,
        },
        ..Default::default()
    }
}

fn with_source<A: Addr>(mut f: Flow, s: &Source<A>, id: u32) -> Flow {
    f.orig.src = Some(s.src.ip());
    f.orig.src_port = s.src_port;
    f.zone = s.zone;
    f.id = (id != 0).then_some(id);
    f
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap as StdMap;

    use kubenode_sysctl::KubernetesVersion;

    use super::*;
    use crate::consts::{IPPROTO_TCP, IPPROTO_UDP};
    use crate::stale::{Endpoint, Protocol, ServicePort};

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// A UDP flow from `client`:`sport` to `vip`:53, DNATed to `backend`:5353.
    fn flow(client: &str, sport: u16, vip: &str, backend: &str, id: u32) -> Flow {
        Flow {
            orig: Tuple {
                src: Some(ip(client)),
                dst: Some(ip(vip)),
                proto: IPPROTO_UDP,
                src_port: sport,
                dst_port: 53,
            },
            reply: Tuple {
                src: Some(ip(backend)),
                dst: Some(ip(client)),
                proto: IPPROTO_UDP,
                src_port: 5353,
                dst_port: sport,
            },
            id: Some(id),
            ..Default::default()
        }
    }

    fn ev(kind: EventKind, flow: Flow) -> FlowEvent {
        FlowEvent { kind, flow }
    }

    /// Tables with one UDP service at `vip`:53 served by `backends` on 5353.
    fn tables(vip: &str, backends: &[&str]) -> StaleMatcher {
        let svc = ServicePort {
            name: "ns/dns:dns".into(),
            protocol: Protocol::Udp,
            cluster_ip: Some(ip(vip)),
            port: 53,
            node_port: 0,
            external_ips: Vec::new(),
            load_balancer_ips: Vec::new(),
        };
        let eps = backends
            .iter()
            .map(|b| Endpoint {
                ip: ip(b),
                port: 5353,
                serving: true,
            })
            .collect();
        let endpoints = StdMap::from([(svc.name.clone(), eps)]);
        StaleMatcher::build(Family::V4, &[svc], &endpoints, KubernetesVersion::default()).unwrap()
    }

    /// An index of IPv4 built (valid) from `flows`.
    fn built(flows: &[Flow]) -> FlowIndex {
        let mut x = FlowIndex::new(IPPROTO_UDP, 1_000_000);
        let t = x.begin_rebuild(Family::V4);
        x.extend(Family::V4, flows);
        x.finish_rebuild(Family::V4, t);
        x
    }

    fn ids(mut flows: Vec<Flow>) -> Vec<Option<u32>> {
        flows.sort_by_key(|f| f.id);
        flows.into_iter().map(|f| f.id).collect()
    }

    #[test]
    fn invalid_until_a_rebuild_completes_and_events_before_it_are_ignored() {
        let mut x = FlowIndex::new(IPPROTO_UDP, 1000);
        assert_eq!(x.state(Family::V4), Err(Resync::NotBuilt));
        x.apply(&ev(
            EventKind::New,
            flow("10.0.0.1", 1000, "10.96.0.10", "10.244.0.1", 1),
        ));
        assert!(x.is_empty(), "nothing is kept before the first dump");
        let t = x.begin_rebuild(Family::V4);
        x.apply(&ev(
            EventKind::New,
            flow("10.0.0.1", 1001, "10.96.0.10", "10.244.0.1", 2),
        ));
        x.extend(
            Family::V4,
            &[flow("10.0.0.1", 1000, "10.96.0.10", "10.244.0.1", 1)],
        );
        assert_eq!(x.state(Family::V4), Err(Resync::NotBuilt));
        x.finish_rebuild(Family::V4, t);
        assert_eq!(x.state(Family::V4), Ok(()));
        assert_eq!(x.state(Family::V6), Err(Resync::NotBuilt), "per family");
        assert_eq!(x.len(), 2);
    }

    #[test]
    fn new_update_destroy_and_interning() {
        let mut x = built(&[]);
        let a = flow("10.0.0.1", 1000, "10.96.0.10", "10.244.0.1", 1);
        let b = flow("10.0.0.2", 1000, "10.96.0.10", "10.244.0.1", 2);
        let c = flow("10.0.0.1", 1000, "10.96.0.10", "10.244.0.2", 3);
        for f in [a, b, c] {
            x.apply(&ev(EventKind::New, f));
        }
        assert_eq!(
            (x.len(), x.pairs(Family::V4)),
            (3, 2),
            "a and b share a pair"
        );
        // An update refreshes, never duplicates; a new ID for the same tuple replaces the old.
        x.apply(&ev(EventKind::Update, a));
        let a2 = Flow { id: Some(9), ..a };
        x.apply(&ev(EventKind::Update, a2));
        assert_eq!(x.len(), 3);
        let all = DumpFilter::default();
        assert_eq!(
            ids(x.matching(Family::V4, &all)),
            [Some(2), Some(3), Some(9)]
        );
        x.apply(&ev(EventKind::Destroy, b));
        x.apply(&ev(EventKind::Destroy, b));
        assert_eq!(x.len(), 2);
        // Other protocols and flows without addresses are not kept.
        let mut tcp = a;
        tcp.orig.proto = IPPROTO_TCP;
        tcp.orig.src_port = 7;
        x.apply(&ev(EventKind::New, tcp));
        let mut bare = a;
        bare.reply.src = None;
        bare.orig.src_port = 8;
        x.apply(&ev(EventKind::New, bare));
        assert_eq!(x.len(), 2);
        // An IPv6 flow goes to the other family, which is not built yet.
        x.apply(&ev(
            EventKind::New,
            flow("fd00::1", 1, "fd00::10", "fd00::20", 4),
        ));
        assert_eq!(x.len(), 2);
    }

    #[test]
    fn a_delete_gets_the_exact_tuple_zone_and_id() {
        let mut f = flow("10.0.0.1", 4242, "10.96.0.10", "10.244.0.1", 77);
        f.zone = 5;
        let mut x = built(&[f]);
        let got = x.stale(Family::V4, &tables("10.96.0.10", &[]));
        let g = got.flows.first().unwrap();
        assert_eq!((g.orig, g.zone, g.id), (f.orig, 5, Some(77)));
        assert_eq!(
            (g.reply.src, g.reply.src_port),
            (f.reply.src, f.reply.src_port)
        );
        assert_eq!((got.pairs, got.indexed), (1, 1));
    }

    #[test]
    fn stale_lookup_takes_every_flow_of_the_removed_pairs_only() {
        let vip = "10.96.0.10";
        let flows = [
            flow("10.0.0.1", 1000, vip, "10.244.0.1", 1),
            flow("10.0.0.2", 1000, vip, "10.244.0.1", 2),
            flow("10.0.0.1", 1001, vip, "10.244.0.2", 3),
            // Not to a frontend: never stale.
            flow("10.0.0.1", 1002, "8.8.8.8", "8.8.8.8", 4),
            // Reached the VIP before its rules existed: stale once the service has tables.
            flow("10.0.0.1", 1003, vip, vip, 5),
        ];
        let mut x = built(&flows);
        let both = tables(vip, &["10.244.0.1", "10.244.0.2"]);
        assert_eq!(ids(x.stale(Family::V4, &both).flows), [Some(5)]);
        let one = tables(vip, &["10.244.0.2"]);
        let got = x.stale(Family::V4, &one);
        assert_eq!(ids(got.flows.clone()), [Some(1), Some(2), Some(5)]);
        assert_eq!(got.pairs, 2);
        // What the pass deleted leaves the index at once.
        x.remove(Family::V4, &got.flows);
        assert_eq!(x.len(), 2);
        assert!(x.stale(Family::V4, &one).flows.is_empty());
    }

    #[test]
    fn lost_events_invalidate_both_families_and_a_rebuild_that_saw_a_loss() {
        let mut x = built(&[flow("10.0.0.1", 1000, "10.96.0.10", "10.244.0.1", 1)]);
        x.lost();
        assert_eq!(x.state(Family::V4), Err(Resync::EventsLost));
        assert_eq!(x.state(Family::V6), Err(Resync::EventsLost));
        let t = x.begin_rebuild(Family::V4);
        x.lost();
        x.finish_rebuild(Family::V4, t);
        assert_eq!(x.state(Family::V4), Err(Resync::EventsLost));
        let t = x.begin_rebuild(Family::V4);
        x.finish_rebuild(Family::V4, t);
        assert_eq!(x.state(Family::V4), Ok(()));
    }

    #[test]
    fn past_the_cap_the_index_is_invalid_and_frees_its_memory() {
        let mut x = FlowIndex::new(IPPROTO_UDP, 3);
        let t = x.begin_rebuild(Family::V4);
        let flows: Vec<_> = (0..3)
            .map(|i| {
                flow(
                    "10.0.0.1",
                    1000 + i,
                    "10.96.0.10",
                    "10.244.0.1",
                    u32::from(i) + 1,
                )
            })
            .collect();
        x.extend(Family::V4, &flows);
        x.finish_rebuild(Family::V4, t);
        assert_eq!(x.state(Family::V4), Ok(()));
        assert!(x.bytes() > 0);
        x.apply(&ev(
            EventKind::New,
            flow("10.0.0.9", 9, "10.96.0.10", "10.244.0.1", 9),
        ));
        assert_eq!(x.state(Family::V4), Err(Resync::Cap));
        assert_eq!(x.state(Family::V6), Err(Resync::Cap));
        assert_eq!((x.len(), x.bytes()), (0, 0));
        // Stays so: events are ignored, a loss does not hide the reason.
        x.apply(&ev(EventKind::New, flows[0]));
        x.lost();
        assert_eq!((x.len(), x.state(Family::V4)), (0, Err(Resync::Cap)));
        // A rebuild over the cap ends invalid too.
        let t = x.begin_rebuild(Family::V4);
        x.extend(
            Family::V4,
            &[
                flows[0],
                flows[1],
                flows[2],
                flow("10.0.0.9", 9, "10.96.0.10", "10.244.0.1", 9),
            ],
        );
        x.finish_rebuild(Family::V4, t);
        assert_eq!(x.state(Family::V4), Err(Resync::Cap));
    }

    #[test]
    fn memory_per_ipv4_flow_is_bounded() {
        let flows: Vec<_> = (0..100_000u32)
            .map(|i| {
                let client = Ipv4Addr::from(0x0a00_0000 + (i >> 8));
                let mut f = flow("10.0.0.1", 0, "10.96.0.10", "10.244.0.1", i + 1);
                f.orig.src = Some(IpAddr::V4(client));
                f.orig.src_port = (i & 0xff) as u16 + 1024;
                f.reply.src = Some(ip(&format!("10.244.0.{}", i % 20)));
                f
            })
            .collect();
        let x = built(&flows);
        assert_eq!(x.len(), 100_000);
        let per_flow = x.bytes() as f64 / x.len() as f64;
        // 12-byte entries plus a control byte, at a load factor of 7/8 to 7/16.
        assert!(per_flow <= 30.0, "{per_flow} bytes per flow");
    }
}
