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

/// The 32 hex digits `hex` in the form of `like`: mdadm's when it has colons, else the kernel's
/// dashed form; upper case when `like` is. For messages that answer in the form a person gave.
pub(crate) fn uuid_like(hex: &str, like: &str) -> String {
    let g = |a: usize, b: usize| hex.get(a..b).unwrap_or("");
    let text = if like.contains(':') {
        format!("{}:{}:{}:{}", g(0, 8), g(8, 16), g(16, 24), g(24, 32))
    } else {
        format!(
            "{}-{}-{}-{}-{}",
            g(0, 8),
            g(8, 12),
            g(12, 16),
            g(16, 20),
            g(20, 32)
        )
    };
    if like.chars().any(|c| c.is_ascii_uppercase()) {
        text.to_ascii_uppercase()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_uuid_is_shown_in_the_form_it_was_given() {
        let hex = "a1b2c3d4e5f60718293a4b5c6d7e8f90";
        assert_eq!(uuid_like(hex, "x:y"), "a1b2c3d4:e5f60718:293a4b5c:6d7e8f90");
        assert_eq!(
            uuid_like(hex, "x-y"),
            "a1b2c3d4-e5f6-0718-293a-4b5c6d7e8f90"
        );
        assert_eq!(
            uuid_like(hex, "X-Y"),
            "A1B2C3D4-E5F6-0718-293A-4B5C6D7E8F90"
        );
    }
}
