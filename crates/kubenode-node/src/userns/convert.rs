//! Every conversion between `kubenode-userns` values and the boundary's objects, in one place.

use std::ffi::OsStr;

use kubenode_userns::{
    Allocation, Error as CoreError, ErrorKind as CoreKind, ListedPod, RestoreStats, UserNamespace,
};

use super::types::{UsernsAllocation, UsernsListedPod, UsernsOutcome};
use crate::errors::native_error_from;

type CoreResult<T> = std::result::Result<T, CoreError>;

/// A pod directory name that is not UTF-8 shows with U+FFFD: JS strings are Unicode.
fn pod_name(pod: &OsStr) -> String {
    pod.to_string_lossy().into_owned()
}

native_error_from! {
    CoreError => Userns,
    CoreKind: Config | Parse | Conflict | Exhausted | Locked | InvalidPodUid | Io | Permission
        | Unsupported
}

/// What a successful manager task hands back, as its outcome.
trait Payload {
    fn outcome(self) -> UsernsOutcome;
}

impl Payload for () {
    fn outcome(self) -> UsernsOutcome {
        UsernsOutcome::default()
    }
}

impl Payload for UserNamespace {
    fn outcome(self) -> UsernsOutcome {
        UsernsOutcome {
            namespace: Some(self),
            ..UsernsOutcome::default()
        }
    }
}

/// A queued call's outcome: mappings for a get-or-create, empty for a release.
impl Payload for Option<UserNamespace> {
    fn outcome(self) -> UsernsOutcome {
        self.map(Payload::outcome).unwrap_or_default()
    }
}

impl Payload for RestoreStats {
    fn outcome(self) -> UsernsOutcome {
        UsernsOutcome {
            restored: u32::try_from(self.restored).unwrap_or(u32::MAX),
            stale_temp_files_removed: u32::try_from(self.stale_temp_files_removed)
                .unwrap_or(u32::MAX),
            ..UsernsOutcome::default()
        }
    }
}

impl<T: Payload> From<CoreResult<T>> for UsernsOutcome {
    fn from(r: CoreResult<T>) -> Self {
        match r {
            Ok(v) => v.outcome(),
            Err(e) => Self {
                error: Some((&e).into()),
                ..Self::default()
            },
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
