//! The two forms of an md array's uuid: mdadm's (`xxxxxxxx:xxxxxxxx:xxxxxxxx:xxxxxxxx`, as
//! `md-uuid-*` links and `mdadm --detail` show it) and the kernel's (`md/uuid`, dashed like any
//! uuid). Both name the same 32 hex digits, which is how mdtune compares and keys them.

/// The 32 lower-case hex digits of a uuid in either form, or `None` when it is neither.
pub(crate) fn uuid_hex(text: &str) -> Option<String> {
    let s = text.trim();
    let groups: Vec<&str> = s.split([':', '-']).collect();
    let shape: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    let ok = (shape == [8, 8, 8, 8] && !s.contains('-')
        || shape == [8, 4, 4, 4, 12] && !s.contains(':'))
        && groups
            .iter()
            .all(|g| g.chars().all(|c| c.is_ascii_hexdigit()));
    ok.then(|| groups.concat().to_ascii_lowercase())
}
