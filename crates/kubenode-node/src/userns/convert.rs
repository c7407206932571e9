//! Every conversion between `kubenode-userns` values and the boundary's objects, in one place.

use std::ffi::OsStr;
use std::path::PathBuf;

use kubenode_userns::{
    Allocation, Config, Error as CoreError, ErrorKind as CoreKind, IdMapping, Layout, ListedPod,
    Options, PodCall, RestoreStats, UserNamespace, VerifyReport,
};

use super::types::{
    UsernsAllocation, UsernsConfig, UsernsIdMapping, UsernsLayout, UsernsListOutcome,
    UsernsListedPod, UsernsOutcome, UsernsPodCall, UsernsVerifyOutcome,
};
use crate::convert;
use crate::errors::{native_error_from, Result};

type CoreResult<T> = std::result::Result<T, CoreError>;

/// The arguments of `SharedManager::open`, numbers checked.
pub fn open_args(c: &UsernsConfig) -> Result<(PathBuf, Config, Options)> {
    let seed = match c.seed {
        Some(s) => Some(convert::index("seed", s, u64::MAX >> 11)?),
        None => None,
    };
    Ok((
        PathBuf::from(&c.pods_dir),
        Config {
            ids_per_pod: c.ids_per_pod,
            first_id: c.first_id,
            length: c.length,
            max_pods: c.max_pods,
        },
        Options {
            lock: c.lock.unwrap_or(true),
            seed,
        },
    ))
}

pub fn pod_calls(calls: Vec<UsernsPodCall>) -> Vec<PodCall> {
    calls
        .into_iter()
        .map(|c| match c.release {
            true => PodCall::Release(c.pod_uid),
            false => PodCall::GetOrCreate(c.pod_uid),
        })
        .collect()
}

/// A pod directory name that is not UTF-8 shows with U+FFFD: JS strings are Unicode.
fn pod_name(pod: &OsStr) -> String {
    pod.to_string_lossy().into_owned()
}

native_error_from! {
    CoreError => Userns,
    CoreKind: Config | Parse | Conflict | Exhausted | Locked | InvalidPodUid | Io | Permission
        | Unsupported
}

impl From<&IdMapping> for UsernsIdMapping {
    fn from(m: &IdMapping) -> Self {
        Self {
            host_id: m.host_id,
            container_id: m.container_id,
            length: m.length,
        }
    }
}

impl UsernsOutcome {
    fn empty() -> Self {
        Self {
            uids: Vec::new(),
            gids: Vec::new(),
            restored: 0,
            stale_temp_files_removed: 0,
            error: None,
        }
    }

    fn failed(e: &CoreError) -> Self {
        Self {
            error: Some(e.into()),
            ..Self::empty()
        }
    }
}

impl From<CoreResult<UserNamespace>> for UsernsOutcome {
    fn from(r: CoreResult<UserNamespace>) -> Self {
        match r {
            Ok(ns) => Self {
                uids: ns.uid_mappings.iter().map(Into::into).collect(),
                gids: ns.gid_mappings.iter().map(Into::into).collect(),
                ..Self::empty()
            },
            Err(e) => Self::failed(&e),
        }
    }
}

/// A queued call's outcome: mappings for a get-or-create, empty for a release.
impl From<CoreResult<Option<UserNamespace>>> for UsernsOutcome {
    fn from(r: CoreResult<Option<UserNamespace>>) -> Self {
        match r {
            Ok(Some(ns)) => Ok(ns).into(),
            Ok(None) => Self::empty(),
            Err(e) => Self::failed(&e),
        }
    }
}

impl From<CoreResult<()>> for UsernsOutcome {
    fn from(r: CoreResult<()>) -> Self {
        match r {
            Ok(()) => Self::empty(),
            Err(e) => Self::failed(&e),
        }
    }
}

impl From<CoreResult<RestoreStats>> for UsernsOutcome {
    fn from(r: CoreResult<RestoreStats>) -> Self {
        match r {
            Ok(s) => Self {
                restored: s.restored as u32,
                stale_temp_files_removed: s.stale_temp_files_removed as u32,
                ..Self::empty()
            },
            Err(e) => Self::failed(&e),
        }
    }
}

impl From<Allocation> for UsernsAllocation {
    fn from(a: Allocation) -> Self {
        Self {
            pod: pod_name(&a.pod),
            host_id: a.host_id,
            length: a.length,
        }
    }
}

impl From<Layout> for UsernsLayout {
    fn from(l: Layout) -> Self {
        Self {
            ids_per_pod: l.ids_per_pod,
            off: l.off,
            slots: l.slots,
        }
    }
}

impl From<ListedPod> for UsernsListedPod {
    fn from(p: ListedPod) -> Self {
        let pod = pod_name(&p.pod);
        match p.mapping {
            Ok((h, l)) => Self {
                pod,
                host_id: Some(h),
                length: Some(l),
                error: None,
            },
            Err(e) => Self {
                pod,
                host_id: None,
                length: None,
                error: Some(e),
            },
        }
    }
}

impl From<CoreResult<Vec<ListedPod>>> for UsernsListOutcome {
    fn from(r: CoreResult<Vec<ListedPod>>) -> Self {
        match r {
            Ok(pods) => Self {
                pods: pods.into_iter().map(Into::into).collect(),
                error: None,
            },
            Err(e) => Self {
                pods: Vec::new(),
                error: Some((&e).into()),
            },
        }
    }
}

impl From<CoreResult<VerifyReport>> for UsernsVerifyOutcome {
    fn from(r: CoreResult<VerifyReport>) -> Self {
        match r {
            Ok(r) => Self {
                report: Some(r),
                error: None,
            },
            Err(e) => Self {
                report: None,
                error: Some((&e).into()),
            },
        }
    }
}
