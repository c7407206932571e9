//! One ctnetlink event message to a [`FlowEvent`]: `IPCTNL_MSG_CT_NEW` with
//! `NLM_F_CREATE | NLM_F_EXCL` is a new flow, without them an update; `IPCTNL_MSG_CT_DELETE` is a
//! destroyed flow. The flow is parsed as a dump entry is.

use crate::attr::Msg;
use crate::consts::*;
use crate::error::Result;
use crate::event::{EventKind, FlowEvent};
use crate::flow::parse_entry_payload;

/// The kind of event a ctnetlink message carries; `None` for anything else (other subsystems,
/// expectations, control messages).
pub fn event_kind(ty: u16, flags: u16) -> Option<EventKind> {
    if ty == ct_type(IPCTNL_MSG_CT_NEW) {
        let created = NLM_F_CREATE | NLM_F_EXCL;
        Some(if flags & created == created {
            EventKind::New
        } else {
            EventKind::Update
        })
    } else if ty == ct_type(IPCTNL_MSG_CT_DELETE) {
        Some(EventKind::Destroy)
    } else {
        None
    }
}

/// Parses one message of an event socket; `Ok(None)` for a message that is not a flow event.
pub fn parse_event(m: &Msg<'_>) -> Result<Option<FlowEvent>> {
    let Some(kind) = event_kind(m.ty, m.flags) else {
        return Ok(None);
    };
    let flow = parse_entry_payload(m.payload)?;
    Ok(Some(FlowEvent { kind, flow }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::{MsgBuf, Msgs};
    use crate::flow::{encode_new, Family, Flow, Tuple};
    use crate::Error;
    use std::net::{IpAddr, Ipv4Addr};

    fn flow() -> Flow {
        let ip = |d| Some(IpAddr::V4(Ipv4Addr::new(10, 0, 0, d)));
        Flow {
            orig: Tuple {
                src: ip(1),
                dst: ip(2),
                proto: 17,
                src_port: 40000,
                dst_port: 53,
            },
            reply: Tuple {
                src: ip(3),
                dst: ip(1),
                proto: 17,
                src_port: 5353,
                dst_port: 40000,
            },
            mark: 7,
            timeout: 30,
            ..Default::default()
        }
    }

    /// A message as the kernel multicasts it: the entry of `flow()` with header `ty`/`flags`.
    fn message(ty: u16, flags: u16) -> Vec<u8> {
        let mut b = MsgBuf::default();
        encode_new(&mut b, Family::V4, &flow(), 0, 0).unwrap();
        b.buf[4..6].copy_from_slice(&ty.to_ne_bytes());
        b.buf[6..8].copy_from_slice(&flags.to_ne_bytes());
        b.buf
    }

    fn parse(bytes: &[u8]) -> Result<Option<FlowEvent>> {
        let m = Msgs::new(bytes).next().unwrap()?;
        parse_event(&m)
    }

    #[test]
    fn new_update_and_destroy_by_type_and_create_flags() {
        let new = ct_type(IPCTNL_MSG_CT_NEW);
        let del = ct_type(IPCTNL_MSG_CT_DELETE);
        let cases = [
            (new, NLM_F_CREATE | NLM_F_EXCL, EventKind::New),
            (new, 0, EventKind::Update),
            // Only both flags together mark a confirmed flow.
            (new, NLM_F_CREATE, EventKind::Update),
            (new, NLM_F_EXCL, EventKind::Update),
            (del, 0, EventKind::Destroy),
        ];
        for (ty, flags, kind) in cases {
            let e = parse(&message(ty, flags)).unwrap().unwrap();
            assert_eq!(e.kind, kind, "{ty:#x} {flags:#x}");
            assert_eq!(e.flow.orig, flow().orig);
            assert_eq!(e.flow.reply, flow().reply);
            assert_eq!(e.flow.mark, 7);
        }
    }

    #[test]
    fn other_messages_are_not_events() {
        for ty in [
            ct_type(IPCTNL_MSG_CT_GET),
            (2 << 8) | IPCTNL_MSG_CT_NEW, // an expectation (NFNL_SUBSYS_CTNETLINK_EXP)
            NLMSG_DONE,
        ] {
            assert_eq!(parse(&message(ty, 0)).unwrap(), None, "{ty:#x}");
        }
    }

    #[test]
    fn a_malformed_event_is_an_error() {
        let mut m = message(ct_type(IPCTNL_MSG_CT_DELETE), 0);
        m.truncate(NLMSG_HDRLEN + 2);
        m[0..4].copy_from_slice(&((NLMSG_HDRLEN + 2) as u32).to_ne_bytes());
        assert!(matches!(parse(&m), Err(Error::Malformed(_))));
    }
}
