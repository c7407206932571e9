//! What a cleanup pass was asked to do and what it did: the shapes callers (and JavaScript)
//! read.

#[cfg(feature = "napi")]
use napi_derive::napi;

use crate::cost::Estimate;

/// Which path a cleanup pass took.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "camelCase", js_name = "ConntrackCleanPath"))]
pub enum CleanPath {
    /// Upstream's whole-table pass.
    #[default]
    Full,
    /// Only what changed since the handle's last successful pass.
    Targeted,
    /// Nothing changed that could make a flow stale: no request was sent.
    Unchanged,
    /// The stale flows were taken from the event-fed flow index: no dump, exact deletes only.
    Indexed,
}

/// Why a full cleanup pass ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "napi", napi(string_enum = "camelCase", js_name = "ConntrackFullReason"))]
pub enum FullReason {
    /// The first pass of this family on the handle.
    First,
    /// The caller asked for it (`full`).
    Requested,
    /// A dry run selects from the whole table.
    DryRun,
    /// The previous pass failed, was partial or left flows it could not delete.
    PreviousIncomplete,
    /// The kernel has no filtered flush.
    Unsupported,
    /// The measured costs favour one full pass.
    Cost,
    /// The event-fed flow index needs a rebuild (not built yet, events lost, or over its cap):
    /// this pass rebuilds it.
    IndexResync,
}

/// What one pass did. Counts are u32: they count table entries (or pairs of them), and a
/// table holds at most `nf_conntrack_max` entries, a u32 in the kernel.
#[derive(Debug, Clone, Default, PartialEq)]
#[cfg_attr(feature = "napi", napi(object, js_name = "ConntrackCleanReport"))]
pub struct CleanReport {
    /// Entries the kernel returned for the (UDP-filtered) dumps of the pass.
    pub listed: u32,
    /// Entries selected as stale.
    pub stale: u32,
    /// Upstream's count: deleted now or already gone (ENOENT).
    pub deleted: u32,
    pub not_found: u32,
    pub failed: u32,
    /// The dump was still interrupted after the last attempt.
    pub partial: bool,
    pub attempts: u32,
    pub seconds: f64,
    pub first_error: Option<String>,
    pub path: CleanPath,
    /// Set when `path` is `Full`.
    pub full_reason: Option<FullReason>,
    /// The estimates the choice compared, when it was a cost decision.
    // Named for the typings: `Estimate` is declared after this module is read.
    #[cfg_attr(feature = "napi", napi(ts_type = "ConntrackCleanEstimate"))]
    pub estimate: Option<Estimate>,
    /// Removed (frontend, backend) pairs walked on the targeted path, one filtered dump each;
    /// on the indexed path, the pairs found stale in the index.
    pub pairs: u32,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct CleanOptions {
    /// Select but do not delete.
    pub dry_run: bool,
    /// Run the full pass whatever the handle remembers.
    pub full: bool,
}
