//! The kernel-side part of an event filter: a classic BPF socket filter (`SO_ATTACH_FILTER`)
//! that drops events whose flow fields cannot match, before they take room in the socket's
//! receive buffer, as libnetfilter_conntrack's `nfct_filter` does. It finds attributes with the
//! `SKF_AD_NLATTR`/`SKF_AD_NLATTR_NEST` ancillary loads. Whatever it cannot decide (an attribute
//! it does not find) it lets through: user space filters every event again after parsing.

use std::net::IpAddr;

use crate::consts::*;
use crate::flow::DumpFilter;

// linux/bpf_common.h and linux/filter.h.
const BPF_LD: u16 = 0x00;
const BPF_LDX: u16 = 0x01;
const BPF_JMP: u16 = 0x05;
const BPF_RET: u16 = 0x06;
const BPF_MISC: u16 = 0x07;
const BPF_W: u16 = 0x00;
const BPF_H: u16 = 0x08;
const BPF_B: u16 = 0x10;
const BPF_IMM: u16 = 0x00;
const BPF_ABS: u16 = 0x20;
const BPF_IND: u16 = 0x40;
const BPF_JEQ: u16 = 0x10;
const BPF_K: u16 = 0x00;
const BPF_TAX: u16 = 0x00;
const SKF_AD_OFF: i32 = -0x1000;
const SKF_AD_NLATTR: i32 = 12;
const SKF_AD_NLATTR_NEST: i32 = 16;

/// Offset of the subsystem byte of `nlmsg_type` (`subsys << 8 | op`, host order).
const SUBSYS_BYTE: u32 = if cfg!(target_endian = "little") { 5 } else { 4 };
/// Where a ctnetlink message's attributes start: after the netlink and nfgenmsg headers.
const ATTRS_AT: u32 = (NLMSG_HDRLEN + NFGEN_HDRLEN) as u32;

/// One instruction, as `struct sock_filter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u16,
    pub jt: u8,
    pub jf: u8,
    pub k: u32,
}

/// Width of a field's value: the load that reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Width {
    Byte,
    Half,
    /// One or more 32-bit words (an IPv4 or IPv6 address).
    Words,
}

/// An exact match of one attribute, found by its path of nested types from the top level.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldCheck {
    path: [u16; 3],
    width: Width,
    /// The value as BPF loads it (network order read as a number).
    values: Vec<u32>,
}

fn addr_check(dir: u16, v4: u16, v6: u16, ip: &IpAddr) -> FieldCheck {
    let (ty, values) = match ip {
        IpAddr::V4(a) => (v4, vec![u32::from_be_bytes(a.octets())]),
        IpAddr::V6(a) => (
            v6,
            a.octets()
                .chunks_exact(4)
                .map(|w| u32::from_be_bytes([w[0], w[1], w[2], w[3]]))
                .collect(),
        ),
    };
    FieldCheck {
        path: [dir, CTA_TUPLE_IP, ty],
        width: Width::Words,
        values,
    }
}

fn port_check(dir: u16, ty: u16, port: u16) -> FieldCheck {
    FieldCheck {
        path: [dir, CTA_TUPLE_PROTO, ty],
        width: Width::Half,
        values: vec![u32::from(port)],
    }
}

/// The exact-match fields of `filter` the kernel can check.
fn checks_for(filter: &DumpFilter) -> Vec<FieldCheck> {
    let mut checks = Vec::new();
    if let Some(p) = filter.proto {
        checks.push(FieldCheck {
            path: [CTA_TUPLE_ORIG, CTA_TUPLE_PROTO, CTA_PROTO_NUM],
            width: Width::Byte,
            values: vec![u32::from(p)],
        });
    }
    if let Some(d) = &filter.orig_dst {
        checks.push(addr_check(CTA_TUPLE_ORIG, CTA_IP_V4_DST, CTA_IP_V6_DST, d));
    }
    if let Some(p) = filter.orig_dst_port {
        checks.push(port_check(CTA_TUPLE_ORIG, CTA_PROTO_DST_PORT, p));
    }
    if let Some(s) = &filter.reply_src {
        checks.push(addr_check(CTA_TUPLE_REPLY, CTA_IP_V4_SRC, CTA_IP_V6_SRC, s));
    }
    if let Some(p) = filter.reply_src_port {
        checks.push(port_check(CTA_TUPLE_REPLY, CTA_PROTO_SRC_PORT, p));
    }
    checks
}

/// Where a conditional jump goes when its condition holds or fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum To {
    Next,
    Accept,
    Reject,
}

struct Asm {
    code: Vec<(Insn, To, To)>,
}

impl Asm {
    fn stmt(&mut self, code: u16, k: u32) {
        self.code.push((
            Insn {
                code,
                jt: 0,
                jf: 0,
                k,
            },
            To::Next,
            To::Next,
        ));
    }

    fn jeq(&mut self, k: u32, jt: To, jf: To) {
        let code = BPF_JMP | BPF_JEQ | BPF_K;
        self.code.push((
            Insn {
                code,
                jt: 0,
                jf: 0,
                k,
            },
            jt,
            jf,
        ));
    }

    /// Resolves the jumps to the accept and reject returns appended at the end; `None` when a
    /// jump is longer than classic BPF's 8-bit offsets reach.
    fn finish(self) -> Option<Vec<Insn>> {
        let accept = self.code.len();
        let reject = accept + 1;
        let mut out = Vec::with_capacity(reject + 1);
        for (i, (mut insn, jt, jf)) in self.code.into_iter().enumerate() {
            let off = |to: To| -> Option<u8> {
                match to {
                    To::Next => Some(0),
                    To::Accept => u8::try_from(accept - i - 1).ok(),
                    To::Reject => u8::try_from(reject - i - 1).ok(),
                }
            };
            insn.jt = off(jt)?;
            insn.jf = off(jf)?;
            out.push(insn);
        }
        out.push(Insn {
            code: BPF_RET | BPF_K,
            jt: 0,
            jf: 0,
            k: u32::MAX,
        });
        out.push(Insn {
            code: BPF_RET | BPF_K,
            jt: 0,
            jf: 0,
            k: 0,
        });
        Some(out)
    }
}

const fn ancillary(what: i32) -> u32 {
    (SKF_AD_OFF + what) as u32
}

/// The socket filter for `filter`: `None` when it has no field the kernel can check (or the
/// program would not fit classic BPF), so no filter is attached.
pub fn program(filter: &DumpFilter) -> Option<Vec<Insn>> {
    let checks = checks_for(filter);
    if checks.is_empty() {
        return None;
    }
    let mut a = Asm { code: Vec::new() };
    // Anything that is not a ctnetlink message is not ours to judge.
    a.stmt(BPF_LD | BPF_B | BPF_ABS, SUBSYS_BYTE);
    a.jeq(u32::from(NFNL_SUBSYS_CTNETLINK), To::Next, To::Accept);
    for c in &checks {
        // A = offset of the top-level attribute path[0] (0: not found).
        a.stmt(BPF_LD | BPF_IMM, ATTRS_AT);
        a.stmt(BPF_LDX | BPF_IMM, u32::from(c.path[0]));
        a.stmt(BPF_LD | BPF_B | BPF_ABS, ancillary(SKF_AD_NLATTR));
        for ty in &c.path[1..] {
            a.jeq(0, To::Accept, To::Next);
            a.stmt(BPF_LDX | BPF_IMM, u32::from(*ty));
            a.stmt(BPF_LD | BPF_B | BPF_ABS, ancillary(SKF_AD_NLATTR_NEST));
        }
        a.jeq(0, To::Accept, To::Next);
        // X = the attribute's offset; its value follows the 4-byte header.
        a.stmt(BPF_MISC | BPF_TAX, 0);
        let size = match c.width {
            Width::Byte => BPF_B,
            Width::Half => BPF_H,
            Width::Words => BPF_W,
        };
        for (i, v) in c.values.iter().enumerate() {
            a.stmt(BPF_LD | size | BPF_IND, (NLA_HDRLEN + 4 * i) as u32);
            a.jeq(*v, To::Next, To::Reject);
        }
    }
    a.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{Ipv4Addr, Ipv6Addr};

    const LD_NLATTR: Insn = Insn {
        code: BPF_LD | BPF_B | BPF_ABS,
        jt: 0,
        jf: 0,
        k: 0xffff_f000 + 12,
    };

    fn jeq(k: u32, jt: u8, jf: u8) -> Insn {
        Insn {
            code: BPF_JMP | BPF_JEQ | BPF_K,
            jt,
            jf,
            k,
        }
    }

    #[test]
    fn no_kernel_filter_without_a_field() {
        assert_eq!(program(&DumpFilter::default()), None);
    }

    #[test]
    fn a_protocol_filter_walks_orig_proto_num_and_compares_one_byte() {
        let f = DumpFilter {
            proto: Some(17),
            ..Default::default()
        };
        let p = program(&f).unwrap();
        assert_eq!(p.len(), 17);
        assert_eq!(p[0].k, SUBSYS_BYTE);
        // Not ctnetlink: jump to the accept at index 15.
        assert_eq!(p[1], jeq(1, 0, 13));
        assert_eq!(p[2].k, 20);
        assert_eq!(p[3].k, u32::from(CTA_TUPLE_ORIG));
        assert_eq!(p[4], LD_NLATTR);
        assert_eq!(p[5], jeq(0, 9, 0));
        assert_eq!(p[6].k, u32::from(CTA_TUPLE_PROTO));
        assert_eq!(p[7].k, 0xffff_f000 + 16);
        assert_eq!(p[9].k, u32::from(CTA_PROTO_NUM));
        assert_eq!(p[12].code, BPF_MISC | BPF_TAX);
        assert_eq!(
            p[13],
            Insn {
                code: BPF_LD | BPF_B | BPF_IND,
                jt: 0,
                jf: 0,
                k: 4
            }
        );
        // Match: fall through to accept; mismatch: skip it to reject.
        assert_eq!(p[14], jeq(17, 0, 1));
        assert_eq!(
            p[15],
            Insn {
                code: BPF_RET,
                jt: 0,
                jf: 0,
                k: u32::MAX
            }
        );
        assert_eq!(
            p[16],
            Insn {
                code: BPF_RET,
                jt: 0,
                jf: 0,
                k: 0
            }
        );
    }

    #[test]
    fn addresses_compare_as_network_order_words_and_ports_as_halves() {
        let f = DumpFilter {
            proto: Some(6),
            orig_dst: Some(IpAddr::V4(Ipv4Addr::new(10, 96, 0, 10))),
            orig_dst_port: Some(53),
            reply_src: Some(IpAddr::V6(Ipv6Addr::new(0xfd00, 0, 0, 0, 0, 0, 0, 1))),
            reply_src_port: Some(8053),
        };
        let p = program(&f).unwrap();
        let cmp: Vec<u32> = p
            .iter()
            .filter(|i| i.code == BPF_JMP | BPF_JEQ | BPF_K && i.jt == 0 && i.jf != 0)
            .map(|i| i.k)
            .collect();
        // The subsystem check, then each value in order.
        assert_eq!(cmp, vec![1, 6, 0x0a60_000a, 53, 0xfd00_0000, 0, 0, 1, 8053]);
        let loads: Vec<(u16, u32)> = p
            .iter()
            .filter(|i| i.code & BPF_IND != 0)
            .map(|i| (i.code, i.k))
            .collect();
        assert_eq!(
            loads,
            vec![
                (BPF_LD | BPF_B | BPF_IND, 4),
                (BPF_LD | BPF_W | BPF_IND, 4),
                (BPF_LD | BPF_H | BPF_IND, 4),
                (BPF_LD | BPF_W | BPF_IND, 4),
                (BPF_LD | BPF_W | BPF_IND, 8),
                (BPF_LD | BPF_W | BPF_IND, 12),
                (BPF_LD | BPF_W | BPF_IND, 16),
                (BPF_LD | BPF_H | BPF_IND, 4),
            ]
        );
        // Every jump lands inside the program, on a return or further on.
        for (i, insn) in p.iter().enumerate() {
            if insn.code == BPF_JMP | BPF_JEQ | BPF_K {
                assert!(i + 1 + usize::from(insn.jt) < p.len());
                assert!(i + 1 + usize::from(insn.jf) < p.len());
            }
        }
        // The reply tuple is found from the top level, its address in the IP nest.
        assert!(p
            .windows(2)
            .any(|w| w[0].k == u32::from(CTA_TUPLE_REPLY) && w[1] == LD_NLATTR));
    }
}
