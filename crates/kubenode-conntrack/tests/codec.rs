//! Codec tests on hand-made byte vectors (layouts of the ctnetlink wire protocol; host-endian
//! headers are little-endian on the test machines).
#![cfg(target_endian = "little")]

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use kubenode_conntrack::codec::{parse_ack, Msg};
use kubenode_conntrack::{
    encode_delete, encode_dump, parse_entry_payload, DumpFilter, Error, Family, Flow, MsgBuf, Msgs,
    Tuple,
};

fn v4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(a, b, c, d))
}

fn hdr(len: u32, ty: u16, flags: u16, seq: u32) -> Vec<u8> {
    let mut v = len.to_le_bytes().to_vec();
    v.extend(ty.to_le_bytes());
    v.extend(flags.to_le_bytes());
    v.extend(seq.to_le_bytes());
    v.extend(0u32.to_le_bytes());
    v
}

#[test]
fn full_dump_request() {
    let mut b = MsgBuf::default();
    encode_dump(&mut b, Family::V4, &DumpFilter::default(), 7);
    let mut want = hdr(20, 0x0101, 0x0301, 7);
    want.extend([2, 0, 0, 0]);
    assert_eq!(b.buf, want);
    let mut b = MsgBuf::default();
    encode_dump(&mut b, Family::V6, &DumpFilter::default(), 1);
    assert_eq!(&b.buf[16..20], &[10, 0, 0, 0]);
}

#[test]
fn udp_filtered_dump_request() {
    let mut b = MsgBuf::default();
    let f = DumpFilter {
        proto: Some(17),
        ..Default::default()
    };
    encode_dump(&mut b, Family::V4, &f, 1);
    let mut want = hdr(56, 0x0101, 0x0301, 1);
    want.extend([2, 0, 0, 0]);
    // CTA_TUPLE_ORIG (nested) { CTA_TUPLE_PROTO (nested) { CTA_PROTO_NUM 17 } }
    want.extend([
        16, 0, 0x01, 0x80, 12, 0, 0x02, 0x80, 5, 0, 1, 0, 17, 0, 0, 0,
    ]);
    // CTA_FILTER (nested) { ORIG_FLAGS = PROTO_NUM (host u32), REPLY_FLAGS = 0 }
    want.extend([
        20, 0, 25, 0x80, 8, 0, 1, 0, 8, 0, 0, 0, 8, 0, 2, 0, 0, 0, 0, 0,
    ]);
    assert_eq!(b.buf, want);
}

#[test]
fn single_vip_filtered_dump_request() {
    let mut b = MsgBuf::default();
    let f = DumpFilter {
        proto: Some(17),
        orig_dst: Some(v4(10, 96, 0, 10)),
        orig_dst_port: Some(53),
        ..Default::default()
    };
    encode_dump(&mut b, Family::V4, &f, 1);
    let mut want = hdr(76, 0x0101, 0x0301, 1);
    want.extend([2, 0, 0, 0]);
    want.extend([36, 0, 0x01, 0x80]);
    want.extend([12, 0, 0x01, 0x80, 8, 0, 2, 0, 10, 96, 0, 10]);
    want.extend([
        20, 0, 0x02, 0x80, 5, 0, 1, 0, 17, 0, 0, 0, 6, 0, 3, 0, 0, 53, 0, 0,
    ]);
    // IP_DST | PROTO_NUM | PROTO_DST_PORT = 42
    want.extend([
        20, 0, 25, 0x80, 8, 0, 1, 0, 42, 0, 0, 0, 8, 0, 2, 0, 0, 0, 0, 0,
    ]);
    assert_eq!(b.buf, want);
}

fn udp_flow() -> Flow {
    Flow {
        orig: Tuple {
            src: Some(v4(10, 0, 0, 1)),
            dst: Some(v4(10, 96, 0, 10)),
            proto: 17,
            src_port: 40000,
            dst_port: 53,
        },
        reply: Tuple {
            src: Some(v4(10, 244, 1, 5)),
            dst: Some(v4(10, 0, 0, 1)),
            proto: 17,
            src_port: 5353,
            dst_port: 40000,
        },
        ..Default::default()
    }
}

fn orig_tuple_bytes() -> Vec<u8> {
    let mut v = vec![52, 0, 0x01, 0x80];
    v.extend([
        20, 0, 0x01, 0x80, 8, 0, 1, 0, 10, 0, 0, 1, 8, 0, 2, 0, 10, 96, 0, 10,
    ]);
    v.extend([28, 0, 0x02, 0x80, 5, 0, 1, 0, 17, 0, 0, 0]);
    v.extend([6, 0, 2, 0, 0x9c, 0x40, 0, 0, 6, 0, 3, 0, 0, 53, 0, 0]);
    v
}

#[test]
fn minimal_delete() {
    let mut b = MsgBuf::default();
    encode_delete(&mut b, Family::V4, &udp_flow(), 9, 0).unwrap();
    let mut want = hdr(72, 0x0102, 0x0001, 9);
    want.extend([2, 0, 0, 0]);
    want.extend(orig_tuple_bytes());
    assert_eq!(b.buf.len(), 72);
    assert_eq!(b.buf, want);
}

#[test]
fn id_and_zone_guarded_delete() {
    let mut b = MsgBuf::default();
    let f = Flow {
        id: Some(0xdeadbeef),
        zone: 3,
        ..udp_flow()
    };
    encode_delete(&mut b, Family::V4, &f, 9, 0).unwrap();
    let mut want = hdr(88, 0x0102, 0x0001, 9);
    want.extend([2, 0, 0, 0]);
    want.extend(orig_tuple_bytes());
    want.extend([6, 0, 18, 0, 0, 3, 0, 0]);
    want.extend([8, 0, 12, 0, 0xde, 0xad, 0xbe, 0xef]);
    assert_eq!(b.buf, want);
}

#[test]
fn delete_rejects_incomplete_or_foreign_tuples() {
    let mut b = MsgBuf::default();
    let mut f = udp_flow();
    f.orig.dst = None;
    assert!(matches!(
        encode_delete(&mut b, Family::V4, &f, 1, 0),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        encode_delete(&mut b, Family::V6, &udp_flow(), 1, 0),
        Err(Error::FamilyMismatch(_))
    ));
}

/// A 164-byte UDP IPv4 dump reply, as the kernel emits it (fill_info order, with NESTED flags).
pub fn reply_164() -> Vec<u8> {
    let mut v = hdr(164, 0x0100, 0x0022, 5);
    v.extend([2, 0, 0, 0]);
    v.extend(orig_tuple_bytes());
    v.extend([52, 0, 0x02, 0x80]);
    v.extend([
        20, 0, 0x01, 0x80, 8, 0, 1, 0, 10, 244, 1, 5, 8, 0, 2, 0, 10, 0, 0, 1,
    ]);
    v.extend([28, 0, 0x02, 0x80, 5, 0, 1, 0, 17, 0, 0, 0]);
    v.extend([6, 0, 2, 0, 0x14, 0xe9, 0, 0, 6, 0, 3, 0, 0x9c, 0x40, 0, 0]);
    v.extend([8, 0, 3, 0, 0, 0, 0x01, 0x88]); // status
    v.extend([8, 0, 8, 0, 0, 0, 0, 7]); // mark
    v.extend([8, 0, 12, 0, 0x12, 0x34, 0x56, 0x78]); // id
    v.extend([8, 0, 11, 0, 0, 0, 0, 1]); // use
    v.extend([8, 0, 7, 0, 0, 0, 0, 30]); // timeout
    v
}

#[test]
fn parse_164_byte_reply() {
    let data = reply_164();
    assert_eq!(data.len(), 164);
    let msgs: Vec<Msg> = Msgs::new(&data).collect::<Result<_, _>>().unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].ty, 0x0100);
    assert_eq!(msgs[0].flags, 0x22);
    let f = parse_entry_payload(msgs[0].payload).unwrap();
    assert_eq!(f.orig, udp_flow().orig);
    assert_eq!(f.reply, udp_flow().reply);
    assert_eq!(
        (f.status, f.mark, f.id, f.timeout, f.zone),
        (0x188, 7, Some(0x12345678), 30, 0)
    );
}

#[test]
fn parse_ignores_attribute_order_and_nested_flag() {
    // Reply tuple first, no NESTED flags (pre-5.2 kernels), unknown attributes in between.
    let mut v = vec![2, 0, 0, 0];
    v.extend([8, 0, 99, 0, 1, 2, 3, 4]);
    v.extend([52, 0, 0x02, 0x00]);
    v.extend([
        20, 0, 0x01, 0x00, 8, 0, 2, 0, 10, 0, 0, 1, 8, 0, 1, 0, 10, 244, 1, 5,
    ]);
    v.extend([
        28, 0, 0x02, 0x00, 6, 0, 3, 0, 0x9c, 0x40, 0, 0, 6, 0, 2, 0, 0x14, 0xe9, 0, 0,
    ]);
    v.extend([5, 0, 1, 0, 17, 0, 0, 0]);
    let mut o = orig_tuple_bytes();
    o[3] = 0;
    v.extend(o);
    v.extend([6, 0, 18, 0x40, 0, 9, 0, 0]); // zone with NET_BYTEORDER set
    let f = parse_entry_payload(&v).unwrap();
    assert_eq!(f.orig, udp_flow().orig);
    assert_eq!(f.reply, udp_flow().reply);
    assert_eq!(f.zone, 9);
    assert_eq!(f.id, None);
}

#[test]
fn parse_ipv6_entry() {
    let a: Ipv6Addr = "fd00::1".parse().unwrap();
    let d: Ipv6Addr = "fd00:96::a".parse().unwrap();
    let f = Flow {
        orig: Tuple {
            src: Some(a.into()),
            dst: Some(d.into()),
            proto: 17,
            src_port: 1,
            dst_port: 53,
        },
        reply: Tuple {
            src: Some(d.into()),
            dst: Some(a.into()),
            proto: 17,
            src_port: 53,
            dst_port: 1,
        },
        timeout: 10,
        ..Default::default()
    };
    let mut b = MsgBuf::default();
    kubenode_conntrack::encode_new(&mut b, Family::V6, &f, 1, 0).unwrap();
    let m = Msgs::new(&b.buf).next().unwrap().unwrap();
    let g = parse_entry_payload(m.payload).unwrap();
    assert_eq!((g.orig, g.reply, g.timeout), (f.orig, f.reply, 10));
}

#[test]
fn every_truncation_is_an_error_not_a_panic() {
    let data = reply_164();
    for cut in 0..data.len() {
        let part = &data[..cut];
        let ok = Msgs::new(part).all(|m| m.and_then(|m| parse_entry_payload(m.payload)).is_ok());
        assert!(!ok || cut == 0, "truncated at {cut} parsed as valid");
    }
    // Payload truncated inside a valid outer length.
    let payload = &data[16..];
    for cut in 0..payload.len() {
        let r = parse_entry_payload(&payload[..cut]);
        // Cutting exactly at an attribute boundary after the orig tuple leaves a valid prefix.
        if let Ok(f) = r {
            assert_eq!(f.orig, udp_flow().orig, "cut {cut}");
        }
    }
}

#[test]
fn malformed_lengths_are_errors() {
    let mut data = reply_164();
    data[0] = 200; // message longer than the datagram
    assert!(matches!(
        Msgs::new(&data).next(),
        Some(Err(Error::Malformed(_)))
    ));
    let mut data = reply_164();
    data[0] = 8; // shorter than a header
    assert!(matches!(
        Msgs::new(&data).next(),
        Some(Err(Error::Malformed(_)))
    ));
    let mut data = reply_164();
    data[20] = 200; // orig tuple runs past the message
    assert!(parse_entry_payload(&data[16..]).is_err());
    let mut data = reply_164();
    data[20] = 2; // attribute length below header size
    assert!(parse_entry_payload(&data[16..]).is_err());
    let mut data = reply_164();
    data[36..38].copy_from_slice(&[7, 0]); // a 3-byte IPv4 address
    assert!(parse_entry_payload(&data[16..]).is_err());
    // No original tuple at all.
    assert!(parse_entry_payload(&[2, 0, 0, 0, 8, 0, 12, 0, 0, 0, 0, 1]).is_err());
}

#[test]
fn error_ack_with_extended_message() {
    // NLMSG_ERROR, flags CAPPED|ACK_TLVS, errno -22, echoed header, then NLMSGERR_ATTR_MSG.
    let mut v = hdr(0, 2, 0x300, 4);
    v.extend((-22i32).to_le_bytes());
    v.extend(hdr(72, 0x0102, 1, 4));
    v.extend([14, 0, 1, 0]);
    v.extend(b"bad tuple\0\0\0");
    let len = v.len() as u32;
    v[..4].copy_from_slice(&len.to_le_bytes());
    let m = Msgs::new(&v).next().unwrap().unwrap();
    let ack = parse_ack(&m).unwrap();
    assert_eq!(ack.errno, 22);
    assert_eq!(ack.msg, Some(&b"bad tuple"[..]));
}

#[test]
fn error_ack_with_unnegatable_errno_or_huge_echo_length() {
    // i32::MIN has no positive errno: a malformed message, not an overflow.
    let mut v = hdr(0, 2, 0, 4);
    v.extend(i32::MIN.to_le_bytes());
    v.extend(hdr(16, 0x0102, 1, 4));
    let len = v.len() as u32;
    v[..4].copy_from_slice(&len.to_le_bytes());
    let m = Msgs::new(&v).next().unwrap().unwrap();
    assert!(parse_ack(&m).is_err());

    // ACK_TLVS with an echoed length near u32::MAX: no TLVs found, no overflow.
    let mut v = hdr(0, 2, 0x200, 4);
    v.extend((-22i32).to_le_bytes());
    v.extend(hdr(u32::MAX, 0x0102, 1, 4));
    let len = v.len() as u32;
    v[..4].copy_from_slice(&len.to_le_bytes());
    let m = Msgs::new(&v).next().unwrap().unwrap();
    let ack = parse_ack(&m).unwrap();
    assert_eq!((ack.errno, ack.msg), (22, None));
}
