//! The user-namespace manager: upstream `UsernsManager` (pkg/kubelet/userns) on the project's
//! allocation bitmap. Methods take `&mut self`; the caller serialises access (`SharedManager`
//! holds it in a mutex), matching upstream's single manager lock.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use kubenode_bitmap::{AllocationBitmap, SplitMix64, Strategy};

use crate::config::{Config, Layout, REINIT_THRESHOLD};
use crate::error::{Error, ErrorKind, Result};
use crate::fsio;
use crate::json::{self, UserNamespace};

/// Upstream's `rangeSpec` for the bitmap.
pub const RANGE_SPEC: &str = "user namespaces";

#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Take the pods-directory lock (default in the binding; a test may open read-only views).
    pub lock: bool,
    /// Seed for the bitmap's random scan, for reproducible tests.
    pub seed: Option<u64>,
}

/// One pod's allocation, for inspection. The pod is a directory name, as bytes: a directory
/// the kubelet lists may have a name that is not UTF-8.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Allocation {
    pub pod: OsString,
    pub host_id: u32,
    pub length: u32,
}

/// What a restore found, for logs and tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RestoreStats {
    pub pods_listed: usize,
    pub restored: usize,
    pub stale_temp_files_removed: usize,
}

#[derive(Debug)]
pub struct Manager {
    pods_dir: PathBuf,
    /// The pods directory, held open; `None` only while it does not exist (without the lock,
    /// which creates it), and then opened on first use.
    pods: Option<fsio::PodsDir>,
    layout: Layout,
    used: AllocationBitmap,
    used_by: HashMap<OsString, u32>,
    removed: u64,
    restore: RestoreStats,
    _lock: Option<fsio::DirLock>,
}

impl Manager {
    /// `MakeUserNsManager` after the mapping pool is known: configuration checks, then a
    /// restore of every `<pods_dir>/<uid>/userns`. The first bad file fails the whole call.
    pub fn open(pods_dir: impl Into<PathBuf>, config: Config, opts: Options) -> Result<Self> {
        let pods_dir = pods_dir.into();
        let layout = config.layout()?;
        // Upstream's first step on disk is the listing, whose errors it wraps so.
        let pods =
            fsio::PodsDir::open(&pods_dir, opts.lock).map_err(|e| e.wrap("read pods from disk"))?;
        let lock = match (&pods, opts.lock) {
            (Some(p), true) => Some(p.lock()?),
            _ => None,
        };
        let rng = match opts.seed {
            Some(s) => SplitMix64::new(s),
            None => SplitMix64::from_entropy(),
        };
        let mut used = AllocationBitmap::with_rng(
            u64::from(layout.slots),
            RANGE_SPEC,
            Strategy::RandomScan { offset: 0 },
            rng,
        )
        .map_err(|e| Error::new(ErrorKind::Config, e.to_string()))?;
        if let Some(r) = layout.reserved_slot() {
            // Never free, so never handed out; files naming it are refused by slot_in_pool.
            let _ = used.allocate(i64::from(r));
        }
        let mut m = Self {
            pods_dir,
            pods,
            layout,
            used,
            used_by: HashMap::new(),
            removed: 0,
            restore: RestoreStats::default(),
            _lock: lock,
        };
        let Some(pods) = &m.pods else {
            return Ok(m);
        };
        let found = pods
            .list_pods()
            .map_err(|e| fsio::list_error(&m.pods_dir, &e).wrap("read pods from disk"))?;
        m.restore.pods_listed = found.len();
        for pod in &found {
            let restored = m.record_pod_mappings(pod).map_err(|e| {
                e.wrap(format_args!("record pod mappings for existing pod {pod:?}"))
            })?;
            if restored {
                m.restore.restored += 1;
            }
        }
        Ok(m)
    }

    pub fn pods_dir(&self) -> &Path {
        &self.pods_dir
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn restore_stats(&self) -> RestoreStats {
        self.restore
    }

    /// Releases since the pod map was last rebuilt (always below the 1000 threshold).
    pub fn removed_since_rebuild(&self) -> u64 {
        self.removed
    }

    /// The pods directory, opened now if it did not exist before.
    fn pods(&mut self) -> Result<&fsio::PodsDir> {
        if self.pods.is_none() {
            self.pods = fsio::PodsDir::open(&self.pods_dir, false)?;
        }
        self.pods.as_ref().ok_or_else(|| {
            let e = std::io::Error::from_raw_os_error(libc::ENOENT);
            Error::io("open", &self.pods_dir, &e)
        })
    }

    /// The store of `readMappingsFromFile`: the pod directory, made if missing, held open.
    fn store(&mut self, pod: &OsStr) -> Result<fsio::PodDir> {
        let dir = self
            .pods()
            .and_then(|p| p.pod(pod, true))
            .map_err(|e| e.wrap("create user namespace store"))?;
        let dir = dir.ok_or_else(|| {
            let e = std::io::Error::from_raw_os_error(libc::ENOENT);
            Error::io("mkdir", &self.pods_dir.join(pod), &e).wrap("create user namespace store")
        })?;
        Ok(dir)
    }

    /// `recordPodMappings`: true when the pod had a (valid) file.
    fn record_pod_mappings(&mut self, pod: &OsStr) -> Result<bool> {
        let dir = self.store(pod)?;
        if self._lock.is_some() {
            // Only with the lock held: no writer of ours can own these files any more.
            self.restore.stale_temp_files_removed += dir.remove_stale_temps();
        }
        match dir.read_mappings()? {
            Some(content) if !content.is_empty() => {
                self.parse_and_record(pod, &content)?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    fn parse_and_record(&mut self, pod: &OsStr, content: &[u8]) -> Result<UserNamespace> {
        let (ns, host_id, length) = parse_file(content)?;
        self.record(pod, host_id, length)?;
        Ok(ns)
    }

    /// Upstream's `record`, checks in order.
    fn record(&mut self, pod: &OsStr, from: u32, length: u32) -> Result<()> {
        check_shape(&self.layout, from, length)?;
        let prev = self.used_by.get(pod).copied();
        if let Some(p) = prev {
            if p != from {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    format!("different user namespace range already used by pod {pod:?}"),
                ));
            }
        }
        let index = slot_in_pool(&self.layout, from)?;
        if prev.is_none() && self.used.has(index as usize) {
            return Err(Error::new(
                ErrorKind::Conflict,
                format!("range picked for pod {pod:?} already taken"),
            ));
        }
        if prev.is_some() {
            return Ok(());
        }
        // In range by the check above, so this cannot fail; upstream ignores the result too.
        let _ = self.used.allocate(i64::from(index));
        self.used_by.insert(pod.to_os_string(), from);
        Ok(())
    }

    fn allocate_one(&mut self, pod: &OsStr) -> Result<(u32, u32)> {
        // The map's offset is 0, so allocate_next never reports InvalidOffset.
        let Some(slot) = self.used.allocate_next().ok().flatten() else {
            return Err(Error::new(
                ErrorKind::Exhausted,
                "could not find an empty slot to allocate a user namespace",
            ));
        };
        // A slot below `slots` of a checked layout always fits; refuse rather than wrap if not.
        let first = u32::try_from(slot)
            .ok()
            .and_then(|s| self.layout.first_id(s));
        let Some(first) = first else {
            self.used.release(slot);
            return Err(Error::new(
                ErrorKind::Config,
                format!("slot {slot} of the user namespace pool does not fit in 32-bit IDs"),
            ));
        };
        self.used_by.insert(pod.to_os_string(), first);
        Ok((first, self.layout.ids_per_pod))
    }

    fn create_user_ns(&mut self, pod: &OsStr, dir: &fsio::PodDir) -> Result<UserNamespace> {
        let (first, length) = self.allocate_one(pod)?;
        let ns = UserNamespace::single(first, length);
        if let Err(e) = dir.write_mappings(json::encode(&ns).as_bytes()) {
            // Roll back as upstream's deferred releaseWithLock does.
            self.release_with_lock(pod);
            return Err(e);
        }
        Ok(ns)
    }

    /// `GetOrCreateUserNamespaceMappings` for a pod with `hostUsers: false`, after the feature
    /// gate and runtime-handler checks (which the caller does, as they come before the lock).
    pub fn get_or_create(&mut self, pod: &str) -> Result<UserNamespace> {
        fsio::check_pod_uid(pod)?;
        let pod = OsStr::new(pod);
        // One open directory for the read and the write: the name is resolved once.
        let dir = self.store(pod)?;
        match dir.read_mappings()? {
            Some(c) if !c.is_empty() => self
                .parse_and_record(pod, &c)
                .map_err(|e| e.wrap("user namespace")),
            _ => self
                .create_user_ns(pod, &dir)
                .map_err(|e| e.wrap("create user namespace")),
        }
    }

    /// `Release`: a pod without an allocation is a no-op (its file, if any, is left alone).
    pub fn release(&mut self, pod: &str) {
        self.release_with_lock(OsStr::new(pod));
    }

    fn release_with_lock(&mut self, pod: &OsStr) {
        let Some(v) = self.used_by.remove(pod) else {
            return;
        };
        self.removed += 1;
        // Keys in used_by passed check_pod_uid or came from the directory listing. Errors are
        // ignored as upstream does; a pod directory swapped for a symbolic link is not opened.
        if let Some(Ok(Some(dir))) = self.pods.as_ref().map(|p| p.pod(pod, false)) {
            dir.remove_mappings();
        }
        if self.removed.is_multiple_of(REINIT_THRESHOLD) {
            // Upstream copies the Go map because Go maps never shrink; shrinking the table
            // bounds memory the same way.
            self.used_by.shrink_to_fit();
            self.removed = 0;
        }
        let index = i64::from(v / self.layout.ids_per_pod) - i64::from(self.layout.off);
        if let Ok(i) = usize::try_from(index) {
            self.used.release(i);
        }
    }

    /// `CleanupOrphanedPodUsernsAllocations`: releases every on-disk pod that is neither
    /// desired nor running, then every allocation whose pod directory is gone.
    pub fn cleanup_orphans<S: AsRef<str>>(&mut self, pods: &[S], running: &[S]) -> Result<()> {
        let known: HashSet<&OsStr> = pods
            .iter()
            .chain(running.iter())
            .map(|s| OsStr::new(s.as_ref()))
            .collect();
        let found = self
            .pods()
            .and_then(|p| p.list_pods().map_err(|e| fsio::list_error(p.path(), &e)))
            .map_err(|e| e.wrap("read pods from disk").wrap("user namespace"))?;
        for pod in &found {
            if !known.contains(pod.as_os_str()) {
                self.release_with_lock(pod);
            }
        }
        let found: HashSet<&OsStr> = found.iter().map(OsString::as_os_str).collect();
        let gone: Vec<OsString> = self
            .used_by
            .keys()
            .filter(|k| !found.contains(k.as_os_str()))
            .cloned()
            .collect();
        for pod in gone {
            self.release_with_lock(&pod);
        }
        Ok(())
    }

    /// Every allocation, sorted by pod UID.
    pub fn allocations(&self) -> Vec<Allocation> {
        let mut v: Vec<Allocation> = self
            .used_by
            .iter()
            .map(|(pod, &host_id)| Allocation {
                pod: pod.clone(),
                host_id,
                length: self.layout.ids_per_pod,
            })
            .collect();
        v.sort_unstable_by(|a, b| a.pod.as_bytes().cmp(b.pod.as_bytes()));
        v
    }

    pub fn allocated(&self, pod: impl AsRef<OsStr>) -> Option<u32> {
        self.used_by.get(pod.as_ref()).copied()
    }

    /// Slots in use according to the bitmap, less the reserved one (equals
    /// `allocations().len()`).
    pub fn used_slots(&self) -> usize {
        let reserved = self.layout.reserved_slot().is_some();
        self.used.count() - usize::from(reserved)
    }
}

/// The first checks of upstream's `record`, in order: the range's length, then its offset.
pub(crate) fn check_shape(layout: &Layout, from: u32, length: u32) -> Result<()> {
    let l = layout.ids_per_pod;
    if length != l {
        return Err(Error::new(
            ErrorKind::Conflict,
            format!("wrong user namespace length {length}"),
        ));
    }
    if !from.is_multiple_of(l) {
        return Err(Error::new(
            ErrorKind::Conflict,
            format!("wrong user namespace offset specified {from}"),
        ));
    }
    Ok(())
}

/// The slot of a range's first ID: upstream's out-of-range check, then (not in upstream) the
/// reserved slot, refused like a range outside the pool since no pod can start with it.
pub(crate) fn slot_in_pool(layout: &Layout, from: u32) -> Result<u32> {
    match layout.slot_of(from) {
        None => Err(Error::new(
            ErrorKind::Conflict,
            format!("id {from} is out of range"),
        )),
        Some(i) if Some(i) == layout.reserved_slot() => Err(Error::new(
            ErrorKind::Conflict,
            format!(
                "id {from} is out of range: its range holds ID {}, which the kernel cannot map",
                crate::config::UNMAPPABLE_ID
            ),
        )),
        Some(i) => Ok(i),
    }
}

/// Upstream's `parseUserNsFileAndRecord` checks before `record`, in order: decode, one UID
/// mapping, as many GID mappings, identical entries, container ID 0. Returns the namespace,
/// host ID and length.
pub fn parse_file(content: &[u8]) -> Result<(UserNamespace, u32, u32)> {
    let ns = json::decode(content).map_err(|e| {
        Error::new(
            ErrorKind::Parse,
            format!("invalid user namespace mappings file: {e}"),
        )
    })?;
    let bad = |m: &str| {
        Err(Error::new(
            ErrorKind::Parse,
            format!("invalid user namespace configuration: {m}"),
        ))
    };
    let (Some(uid), true) = (ns.uid_mappings.first().copied(), ns.uid_mappings.len() == 1) else {
        return bad("no more than one mapping allowed.");
    };
    if ns.gid_mappings.len() != ns.uid_mappings.len() {
        return bad("GID and UID mappings should be identical.");
    }
    let Some(gid) = ns.gid_mappings.first().copied() else {
        return bad("GID and UID mappings should be identical.");
    };
    if uid != gid {
        return bad("GID and UID mapping should be identical");
    }
    if uid.container_id != 0 {
        return bad("UID 0 must be mapped");
    }
    if gid.container_id != 0 {
        return bad("GID 0 must be mapped");
    }
    Ok((ns, uid.host_id, uid.length))
}

/// One pod of a read-only listing (`kubenode userns ls`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedPod {
    /// The directory name, as bytes.
    pub pod: OsString,
    /// `(hostId, length)` of a valid file, or the parse error.
    pub mapping: std::result::Result<(u32, u32), String>,
}

/// Reads every pod's file without locking or changing anything. Pods without a file are left
/// out.
pub fn list_mappings(pods_dir: &Path) -> Result<Vec<ListedPod>> {
    let listed = open_existing(pods_dir).and_then(|p| {
        let found = p.list_pods().map_err(|e| fsio::list_error(pods_dir, &e))?;
        Ok((p, found))
    });
    let (pods, found) = listed.map_err(|e| e.wrap("read pods from disk"))?;
    let mut out = Vec::new();
    for pod in found {
        let read = pods
            .pod(&pod, false)
            .and_then(|d| d.map_or(Ok(None), |d| d.read_mappings()));
        let mapping = match read {
            Ok(None) => continue,
            Ok(Some(c)) if c.is_empty() => continue,
            Ok(Some(c)) => parse_file(&c)
                .map(|(_, h, l)| (h, l))
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        out.push(ListedPod { pod, mapping });
    }
    Ok(out)
}

/// Reads and checks one pod's file (for `verify`).
pub fn read_pod_mapping(pods_dir: &Path, pod: &str) -> Result<(u32, u32)> {
    fsio::check_pod_uid(pod)?;
    let dir = open_existing(pods_dir)?.pod(OsStr::new(pod), false)?;
    match dir.map_or(Ok(None), |d| d.read_mappings())? {
        Some(c) if !c.is_empty() => parse_file(&c).map(|(_, h, l)| (h, l)),
        _ => Err(Error::new(
            ErrorKind::Io,
            format!(
                "pod {pod:?} has no user namespace mappings file in {}",
                pods_dir.display()
            ),
        )),
    }
}

/// The pods directory for reading; missing is an error like Go's `os.ReadDir` gives.
fn open_existing(pods_dir: &Path) -> Result<fsio::PodsDir> {
    fsio::PodsDir::open(pods_dir, false)?.ok_or_else(|| {
        let e = std::io::Error::from_raw_os_error(libc::ENOENT);
        fsio::list_error(pods_dir, &e)
    })
}
