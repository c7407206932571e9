//! Table health of one network namespace: the entry count and limit
//! (`IPCTNL_MSG_CT_GET_STATS`, what `conntrack -C` reads), the kernel's per-CPU counters
//! (`IPCTNL_MSG_CT_GET_STATS_CPU`, what `conntrack -S` prints), and the rule that turns a
//! nearly full table into one warning per crossing.

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::attr::{be16, be32, Attrs};
use crate::consts::*;
use crate::error::{Error, Result};

/// The counters the kernel keeps per CPU for one network namespace (`conntrack -S`). Each is
/// the kernel's `unsigned int` and wraps at 2^32. Attributes the kernel marks "no longer used"
/// (searched, new, ignore, delete, delete_list) and any newer ones are skipped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "ConntrackCpuStats"))]
pub struct CpuStats {
    /// The CPU these counters are of.
    pub cpu: u32,
    /// Lookups that found an entry.
    pub found: u32,
    /// Packets conntrack could not track (malformed, or a state it refuses).
    pub invalid: u32,
    /// Entries inserted.
    pub insert: u32,
    /// Inserts that lost a race to an equal entry and could not be resolved.
    pub insert_failed: u32,
    /// Packets dropped because no entry could be made (the table was full).
    pub drop: u32,
    /// Unassured entries evicted to make room in a full table.
    pub early_drop: u32,
    /// ICMP errors that named no known connection.
    pub error: u32,
    /// Lookups restarted because a hash resize moved the chain.
    pub search_restart: u32,
    /// Insert races resolved by reusing the other entry.
    pub clash_resolve: u32,
    /// Inserts refused because the hash chain was too long.
    pub chain_toolong: u32,
}

/// The per-CPU counters summed: what a node-wide counter reports. u64 sums as JS numbers
/// (exact far beyond any count a table reaches).
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "ConntrackStatsTotal"))]
pub struct StatsTotal {
    /// `found` of every CPU.
    pub found: f64,
    /// `invalid` of every CPU.
    pub invalid: f64,
    /// `insert` of every CPU.
    pub insert: f64,
    /// `insertFailed` of every CPU.
    pub insert_failed: f64,
    /// `drop` of every CPU.
    pub drop: f64,
    /// `earlyDrop` of every CPU.
    pub early_drop: f64,
    /// `error` of every CPU.
    pub error: f64,
    /// `searchRestart` of every CPU.
    pub search_restart: f64,
    /// `clashResolve` of every CPU.
    pub clash_resolve: f64,
    /// `chainToolong` of every CPU.
    pub chain_toolong: f64,
}

/// One reading of a namespace's table.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "ConntrackStats"))]
pub struct TableStats {
    /// Entries in this namespace's table (`conntrack -C`).
    pub count: u32,
    /// The limit a table may hold (`nf_conntrack_max`: one value for every namespace, each
    /// counting its own entries against it); 0 is no limit.
    pub max: u32,
    /// One per possible CPU, in CPU order.
    pub per_cpu: Vec<CpuStats>,
    /// The per-CPU counters summed.
    pub total: StatsTotal,
}

/// Where attribute `ty` of a per-CPU message goes, if it is one this client reports.
fn counter(s: &mut CpuStats, ty: u16) -> Option<&mut u32> {
    Some(match ty {
        CTA_STATS_FOUND => &mut s.found,
        CTA_STATS_INVALID => &mut s.invalid,
        CTA_STATS_INSERT => &mut s.insert,
        CTA_STATS_INSERT_FAILED => &mut s.insert_failed,
        CTA_STATS_DROP => &mut s.drop,
        CTA_STATS_EARLY_DROP => &mut s.early_drop,
        CTA_STATS_ERROR => &mut s.error,
        CTA_STATS_SEARCH_RESTART => &mut s.search_restart,
        CTA_STATS_CLASH_RESOLVE => &mut s.clash_resolve,
        CTA_STATS_CHAIN_TOOLONG => &mut s.chain_toolong,
        _ => return None,
    })
}

impl StatsTotal {
    pub(crate) fn add(&mut self, c: &CpuStats) {
        let pairs = [
            (&mut self.found, c.found),
            (&mut self.invalid, c.invalid),
            (&mut self.insert, c.insert),
            (&mut self.insert_failed, c.insert_failed),
            (&mut self.drop, c.drop),
            (&mut self.early_drop, c.early_drop),
            (&mut self.error, c.error),
            (&mut self.search_restart, c.search_restart),
            (&mut self.clash_resolve, c.clash_resolve),
            (&mut self.chain_toolong, c.chain_toolong),
        ];
        for (sum, v) in pairs {
            *sum += f64::from(v);
        }
    }
}

/// Decodes one `IPCTNL_MSG_CT_GET_STATS_CPU` reply: the CPU is the nfgenmsg's `res_id`.
pub fn parse_cpu_stats(payload: &[u8]) -> Result<CpuStats> {
    let res_id = payload
        .get(2..NFGEN_HDRLEN)
        .ok_or(Error::Malformed("stats message without an nfgenmsg header"))?;
    let mut s = CpuStats {
        cpu: u32::from(be16(res_id)?),
        ..CpuStats::default()
    };
    for a in Attrs::new(payload.get(NFGEN_HDRLEN..).unwrap_or(&[])) {
        let (ty, p) = a?;
        if let Some(slot) = counter(&mut s, ty) {
            *slot = be32(p)?;
        }
    }
    Ok(s)
}

/// The count and limit of an `IPCTNL_MSG_CT_GET_STATS` reply; the limit is absent before
/// Linux 4.20.
pub fn parse_global_stats(payload: &[u8]) -> Result<(u32, Option<u32>)> {
    let (mut count, mut max) = (None, None);
    for a in Attrs::new(payload.get(NFGEN_HDRLEN..).unwrap_or(&[])) {
        let (ty, p) = a?;
        match ty {
            CTA_STATS_GLOBAL_ENTRIES => count = Some(be32(p)?),
            CTA_STATS_GLOBAL_MAX_ENTRIES => max = Some(be32(p)?),
            _ => {}
        }
    }
    let count = count.ok_or(Error::Malformed("stats reply without an entry count"))?;
    Ok((count, max))
}

/// `nf_conntrack_max` from procfs, for kernels whose stats reply lacks it.
pub(crate) fn max_from_proc() -> Result<u32> {
    const PATH: &str = "/proc/sys/net/netfilter/nf_conntrack_max";
    let text = std::fs::read_to_string(PATH).map_err(|source| Error::Io {
        op: "read nf_conntrack_max",
        source,
    })?;
    text.trim()
        .parse()
        .map_err(|_| Error::Malformed("nf_conntrack_max is not a number"))
}

/// The default `--conntrack-full-threshold`: warn at 90 % of the limit.
pub const DEFAULT_FULL_THRESHOLD: f64 = 0.9;
/// How far below the threshold usage must fall before a later crossing warns again, so a table
/// hovering at the threshold warns once, not at every reading.
pub const REARM_GAP: f64 = 0.05;

/// What one reading did to the nearly-full warning: whether it stands, and the message of a
/// new crossing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(object, object_from_js = false, js_name = "ConntrackFullAlarm"))]
pub struct FullAlarm {
    pub raised: bool,
    /// Set when this reading crossed the threshold (warn now).
    pub message: Option<String>,
}

/// Checks a threshold: a fraction of the limit from 0 (off) to 1.
pub fn check_full_threshold(threshold: f64) -> Result<f64> {
    if threshold.is_finite() && (0.0..=1.0).contains(&threshold) {
        return Ok(threshold);
    }
    Err(Error::OutOfRange(format!(
        "conntrack full threshold must be a fraction of nf_conntrack_max from 0 (off) to 1, got {threshold}"
    )))
}

/// The nearly-full rule: a reading at or above `threshold` of the limit raises the warning
/// (with its message) unless it stands already; it stands until usage falls [`REARM_GAP`]
/// below the threshold (or half of it, for thresholds under twice the gap). No limit (0) or a
/// threshold of 0 never warns.
pub fn full_alarm(raised: bool, count: u32, max: u32, threshold: f64) -> Result<FullAlarm> {
    let threshold = check_full_threshold(threshold)?;
    if max == 0 || threshold == 0.0 {
        return Ok(FullAlarm {
            raised: false,
            message: None,
        });
    }
    let usage = f64::from(count) / f64::from(max);
    if raised {
        let rearm = threshold - REARM_GAP.min(threshold / 2.0);
        return Ok(FullAlarm {
            raised: usage >= rearm,
            message: None,
        });
    }
    if usage < threshold {
        return Ok(FullAlarm {
            raised: false,
            message: None,
        });
    }
    let percent = u64::from(count) * 100 / u64::from(max);
    Ok(FullAlarm {
        raised: true,
        message: Some(format!(
            "conntrack table {percent}% full ({count} of {max} entries, warning at {}%): \
             once full, packets of new connections are dropped",
            (threshold * 100.0).round()
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attr::MsgBuf;

    fn payload(res_id: u16, attrs: &[(u16, u32)]) -> Vec<u8> {
        let mut b = MsgBuf::default();
        let m = b.begin_msg(ct_type(IPCTNL_MSG_CT_GET_STATS_CPU), 0, 1, 0);
        for (ty, v) in attrs {
            b.attr(*ty, &v.to_be_bytes());
        }
        b.end_msg(m);
        let mut p = b.buf[NLMSG_HDRLEN..].to_vec();
        p[2..4].copy_from_slice(&res_id.to_be_bytes());
        p
    }

    #[test]
    fn a_cpu_message_decodes_known_counters_and_skips_the_rest() {
        let p = payload(
            3,
            &[
                (CTA_STATS_SEARCHED, 99),
                (CTA_STATS_FOUND, 1),
                (CTA_STATS_INSERT_FAILED, 2),
                (CTA_STATS_DROP, 3),
                (CTA_STATS_EARLY_DROP, 4),
                (CTA_STATS_CHAIN_TOOLONG, 5),
                (40, 7), // a counter of a newer kernel
            ],
        );
        let s = parse_cpu_stats(&p).unwrap();
        assert_eq!(
            s,
            CpuStats {
                cpu: 3,
                found: 1,
                insert_failed: 2,
                drop: 3,
                early_drop: 4,
                chain_toolong: 5,
                ..CpuStats::default()
            }
        );
        let mut total = StatsTotal::default();
        total.add(&s);
        total.add(&CpuStats {
            drop: u32::MAX,
            ..CpuStats::default()
        });
        assert_eq!(total.drop, 3.0 + f64::from(u32::MAX));
    }

    #[test]
    fn malformed_stats_are_errors_not_panics() {
        assert!(parse_cpu_stats(&[2, 0]).is_err());
        let mut p = payload(0, &[(CTA_STATS_FOUND, 1)]);
        p.truncate(p.len() - 2);
        assert!(parse_cpu_stats(&p).is_err());
        let short = [0u8, 0, 0, 0, 6, 0, CTA_STATS_DROP as u8, 0, 1, 0];
        assert!(parse_cpu_stats(&short).is_err());
        assert!(matches!(
            parse_global_stats(&payload(0, &[])),
            Err(Error::Malformed(_))
        ));
        let g = payload(
            0,
            &[
                (CTA_STATS_GLOBAL_ENTRIES, 5),
                (CTA_STATS_GLOBAL_MAX_ENTRIES, 9),
            ],
        );
        assert_eq!(parse_global_stats(&g).unwrap(), (5, Some(9)));
        let old = payload(0, &[(CTA_STATS_GLOBAL_ENTRIES, 5)]);
        assert_eq!(parse_global_stats(&old).unwrap(), (5, None));
    }

    #[test]
    fn the_warning_is_raised_once_per_crossing_and_rearms_below_the_gap() {
        let step = |raised, count| full_alarm(raised, count, 1000, 0.9).unwrap();
        assert!(!step(false, 899).raised);
        let up = step(false, 900);
        assert!(up.raised);
        assert_eq!(
            up.message.as_deref(),
            Some(
                "conntrack table 90% full (900 of 1000 entries, warning at 90%): once full, \
                 packets of new connections are dropped"
            )
        );
        // Standing: no second message while above the re-arm point.
        assert_eq!(
            step(true, 1000),
            FullAlarm {
                raised: true,
                message: None
            }
        );
        assert!(step(true, 850).raised);
        assert!(!step(true, 849).raised);
        // Off: no limit, or a threshold of 0.
        assert!(!full_alarm(false, 10, 0, 0.9).unwrap().raised);
        assert!(!full_alarm(false, 10, 10, 0.0).unwrap().raised);
        // A small threshold re-arms at half of it.
        assert!(full_alarm(true, 3, 100, 0.06).unwrap().raised);
        assert!(!full_alarm(true, 2, 100, 0.06).unwrap().raised);
    }

    #[test]
    fn a_threshold_outside_zero_to_one_is_refused() {
        for t in [-0.1, 1.01, f64::NAN, f64::INFINITY] {
            let e = full_alarm(false, 1, 1, t).unwrap_err();
            assert!(matches!(e, Error::OutOfRange(_)), "{t}");
        }
        assert!(check_full_threshold(1.0).is_ok());
        assert!(check_full_threshold(0.0).is_ok());
    }
}
