//! `NormalizeName` (component-helpers `sysctl.go`): the first separator decides the form; a
//! slash-first name has every `.` and `/` swapped, giving the canonical dotted form.

use std::borrow::Cow;

/// Canonical dotted form of a sysctl name. Borrows when nothing changes (dotted names), so the
/// admission path allocates only for slash-first names.
pub fn normalize_name(name: &str) -> Cow<'_, str> {
    let b = name.as_bytes();
    match b.iter().position(|&c| c == b'.' || c == b'/') {
        Some(i) if b[i] == b'/' => {
            let swapped: String = name
                .chars()
                .map(|c| match c {
                    '.' => '/',
                    '/' => '.',
                    c => c,
                })
                .collect();
            Cow::Owned(swapped)
        }
        _ => Cow::Borrowed(name),
    }
}

#[cfg(test)]
mod tests {
    use super::normalize_name;

    #[test]
    fn upstream_cases() {
        for (input, want) in [
            ("", ""),
            ("kernel.shm_rmid_forced", "kernel.shm_rmid_forced"),
            ("kernel/shm_rmid_forced", "kernel.shm_rmid_forced"),
            (
                "net.ipv4.conf.eno2/100.rp_filter",
                "net.ipv4.conf.eno2/100.rp_filter",
            ),
            (
                "net/ipv4/conf/eno2.100/rp_filter",
                "net.ipv4.conf.eno2/100.rp_filter",
            ),
            (
                "net/ipv4/ip_local_port_range",
                "net.ipv4.ip_local_port_range",
            ),
            ("kernel", "kernel"),
            ("net.ipv4/conf", "net.ipv4/conf"),
            ("/a.b", ".a/b"),
        ] {
            assert_eq!(normalize_name(input), want, "{input:?}");
        }
    }
}
