//! Deleting by filter. Either one dump with the filter (narrowed in the kernel, re-checked
//! here) and deletes of its matches by exact tuple, zone and `CTA_ID` (the batch path), or,
//! for `flush`, the kernel's own flush request when the kernel can apply the whole filter
//! exactly: nothing re-checks what a flush removes.

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::conntrack::{entry_count, BatchReport, Conntrack, DumpStats};
use crate::consts::*;
use crate::error::{Error, Result};
use crate::filter::{encode_filter_attrs, AddrMatch, DirectionFilter, FlowFilter};
use crate::flow::{Family, Flow};
use crate::probe::FlushSupport;

/// How a filtered delete or flush removed its flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "camelCase", js_name = "ConntrackFlushPath"))]
pub enum FlushPath {
    /// One flush request; the kernel walked the table and deleted the matches.
    Kernel,
    /// A filtered dump, then deletes of the matches by exact tuple (`CTA_ID`-guarded).
    DumpDelete,
}

/// What a filtered delete, flush or purge did.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(
    feature = "napi",
    napi(object, object_from_js = false, js_name = "ConntrackFilterDeleteReport")
)]
pub struct FilterDeleteReport {
    pub path: FlushPath,
    /// Flows the dumps matched (0 on the kernel path, which lists nothing).
    pub matched: u32,
    /// Deleted now or already gone, as kube-proxy counts; `None` on the kernel path: the
    /// kernel reports no count, and the table's entry count is no measure (a flush unlinks
    /// flows at once, but a flow still referenced, e.g. by a packet waiting for ARP, is counted
    /// until it is freed).
    pub deleted: Option<u32>,
    /// Of `deleted`, flows already gone (ENOENT) when their delete arrived.
    pub not_found: u32,
    /// Flows the kernel refused to delete.
    pub failed: u32,
    pub first_error: Option<String>,
    /// A dump stayed interrupted: flows may have been missed.
    pub partial: bool,
    /// Dumps made (0 on the kernel path).
    pub dumps: u32,
}

impl FilterDeleteReport {
    fn dumped(batch: &BatchReport, matched: usize, partial: bool, dumps: u32) -> Self {
        FilterDeleteReport {
            path: FlushPath::DumpDelete,
            matched: entry_count(matched),
            deleted: Some(batch.deleted()),
            not_found: batch.not_found,
            failed: batch.failed,
            first_error: batch.first_error.clone(),
            partial,
            dumps,
        }
    }
}

/// Whether a flush request can carry `filter` whole, so the kernel deletes exactly what
/// [`FlowFilter::matches`] accepts. Family and mark work on every kernel with ctnetlink flush
/// filtering (4.20+); tuple fields and zones need `CTA_FILTER` on flush (`Supported`). Labels,
/// CIDRs wider than one host and zone 0 (the kernel's "any zone") have no exact kernel form.
pub(crate) fn kernel_flushable(filter: &FlowFilter, support: FlushSupport) -> bool {
    let hosts = |d: &DirectionFilter| {
        d.src.is_none_or(|m: AddrMatch| m.is_host()) && d.dst.is_none_or(|m| m.is_host())
    };
    if filter.labels.is_some() || filter.zone == Some(0) {
        return false;
    }
    if !hosts(&filter.orig) || !hosts(&filter.reply) {
        return false;
    }
    let needs_filter = filter.proto.is_some()
        || !filter.orig.is_empty()
        || !filter.reply.is_empty()
        || filter.zone.is_some();
    !needs_filter || support == FlushSupport::Supported
}

/// Errnos of a kernel that does not take this flush request: fall back to dump and delete.
fn flush_refused(e: &Error) -> bool {
    match e {
        Error::Unsupported { .. } => true,
        Error::Kernel { errno, .. } => *errno == libc::EINVAL || *errno == libc::EOPNOTSUPP,
        _ => false,
    }
}

impl Conntrack {
    /// Deletes every flow of `family` that `filter` matches: one filtered dump, then deletes
    /// by exact tuple, zone and `CTA_ID`, batched.
    pub fn delete_matching(
        &mut self,
        family: Family,
        filter: &FlowFilter,
    ) -> Result<FilterDeleteReport> {
        self.delete_where(family, &[*filter], |_| true)
    }

    /// Deletes the flows that match any of `filters` and pass `keep`: one dump per filter, a
    /// flow counted once (under the first filter that matches it).
    pub(crate) fn delete_where(
        &mut self,
        family: Family,
        filters: &[FlowFilter],
        keep: impl Fn(&Flow) -> bool,
    ) -> Result<FilterDeleteReport> {
        let mut flows: Vec<Flow> = Vec::new();
        let mut partial = false;
        for (i, filter) in filters.iter().enumerate() {
            let earlier = filters.get(..i).unwrap_or(&[]);
            let (found, stats): (Vec<Flow>, DumpStats) = self.list(family, filter)?;
            partial |= stats.partial;
            flows.extend(
                found
                    .into_iter()
                    .filter(|f| keep(f) && !earlier.iter().any(|e| e.matches(f))),
            );
        }
        let batch = self.delete(family, &flows)?;
        Ok(FilterDeleteReport::dumped(
            &batch,
            flows.len(),
            partial,
            entry_count(filters.len()),
        ))
    }

    /// Deletes the flows of `family` that `filter` matches (all of them when it is empty).
    /// The kernel flushes in one request when it can apply the whole filter exactly (see
    /// [`kernel_flushable`]); otherwise, or when it refuses the request, this is
    /// [`Self::delete_matching`].
    pub fn flush(&mut self, family: Family, filter: &FlowFilter) -> Result<FilterDeleteReport> {
        filter.validate(family)?;
        if kernel_flushable(filter, self.flush_support()) {
            match self.kernel_flush(family, filter) {
                Ok(r) => return Ok(r),
                Err(e) if flush_refused(&e) => {}
                Err(e) => return Err(e),
            }
        }
        self.delete_matching(family, filter)
    }

    fn kernel_flush(&mut self, family: Family, filter: &FlowFilter) -> Result<FilterDeleteReport> {
        let seq = self.next_seq();
        self.out.clear();
        let m = self.out.begin_msg(
            ct_type(IPCTNL_MSG_CT_DELETE),
            NLM_F_REQUEST | NLM_F_ACK,
            seq,
            family.af(),
        );
        // A non-zero nfgenmsg version makes the kernel honour the family; with version 0 a
        // flush empties every family's table.
        if let Some(v) = self.out.buf.get_mut(m + NLMSG_HDRLEN + 1) {
            *v = 1;
        }
        encode_filter_attrs(&mut self.out, filter);
        self.out.end_msg(m);
        self.request("flush conntrack table", seq, |_| {})?;
        Ok(FilterDeleteReport {
            path: FlushPath::Kernel,
            matched: 0,
            deleted: None,
            not_found: 0,
            failed: 0,
            first_error: None,
            partial: false,
            dumps: 0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::Masked;

    #[test]
    fn only_exact_kernel_forms_flush_in_the_kernel() {
        let host = |s: &str| Some(AddrMatch::parse("t", s).unwrap());
        let all = FlowFilter::default();
        let mark = FlowFilter {
            mark: Some(Masked { value: 1, mask: 1 }),
            ..Default::default()
        };
        let tuple = FlowFilter {
            proto: Some(17),
            orig: DirectionFilter {
                dst: host("10.0.0.1"),
                dst_port: Some(53),
                ..Default::default()
            },
            zone: Some(4),
            ..Default::default()
        };
        for support in [FlushSupport::Unsupported, FlushSupport::Supported] {
            assert!(kernel_flushable(&all, support));
            assert!(kernel_flushable(&mark, support));
        }
        assert!(kernel_flushable(&tuple, FlushSupport::Supported));
        assert!(!kernel_flushable(&tuple, FlushSupport::Unsupported));
        let not_exact = [
            FlowFilter {
                orig: DirectionFilter {
                    src: host("10.0.0.0/8"),
                    ..Default::default()
                },
                ..Default::default()
            },
            FlowFilter {
                zone: Some(0),
                ..Default::default()
            },
            FlowFilter {
                labels: Some(Masked { value: 1, mask: 1 }),
                ..Default::default()
            },
        ];
        for f in not_exact {
            assert!(!kernel_flushable(&f, FlushSupport::Supported), "{f:?}");
        }
    }

    #[test]
    fn refusals_fall_back_other_errors_do_not() {
        let k = |errno| Error::Kernel {
            op: "flush",
            errno,
            message: String::new(),
        };
        assert!(flush_refused(&k(libc::EINVAL)));
        assert!(flush_refused(&k(libc::EOPNOTSUPP)));
        assert!(!flush_refused(&k(libc::ENOMEM)));
        assert!(!flush_refused(&Error::Permission { op: "flush" }));
    }
}
