//! udev's rules syntax, as far as mdtune must read its own rule the way udevd does
//! (`udev_rules_parse_file` and `parse_line` in systemd's `udev-rules.c`): which lines are
//! active, the keys, operators and values on a line, and udev's patterns. Pure; what a rule must
//! say to replay the persisted state is `super::replay`'s.

/// The lines udevd parses from a rules file: each physical line's leading whitespace skipped,
/// comment lines (`#` first) and blank lines skipped, a line ending in `\` joined with the next
/// (without the backslash; a comment line in between is skipped, as udevd does).
pub(crate) fn active_lines(text: &str) -> Vec<String> {
    let mut lines = Vec::new();
    let mut continued: Option<String> = None;
    for physical in text.lines() {
        let line = physical.trim_start();
        if line.starts_with('#') {
            continue;
        }
        let mut joined = continued.take().unwrap_or_default();
        joined.push_str(line);
        match joined.strip_suffix('\\') {
            Some(head) => continued = Some(head.to_string()),
            None if joined.trim().is_empty() => {}
            None => lines.push(joined),
        }
    }
    lines.extend(continued.filter(|l| !l.trim().is_empty()));
    lines
}

/// An operator of a rule's key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `==`
    Match,
    /// `!=`
    Nomatch,
    /// `=`, `+=`, `-=`, `:=`
    Assign,
}

/// One `KEY{attr}OP"value"` of a line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub(crate) key: String,
    pub(crate) attr: Option<String>,
    pub(crate) op: Op,
    pub(crate) value: String,
}

/// The keys of a line, separated by commas and whitespace; an error says what udevd would
/// refuse (it then ignores the whole line).
pub(crate) fn tokens(line: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut rest = line;
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        if rest.is_empty() {
            return Ok(out);
        }
        let end = rest
            .find(['=', '!', '+', '-', ':', '{'])
            .ok_or_else(|| format!("{rest:?} has no operator"))?;
        let key = rest[..end].trim().to_string();
        rest = &rest[end..];
        let mut attr = None;
        if let Some(r) = rest.strip_prefix('{') {
            let close = r.find('}').ok_or("an attribute without its }")?;
            attr = Some(r[..close].to_string());
            rest = &r[close + 1..];
        }
        let (op, len) = match rest.get(..2) {
            Some("==") => (Op::Match, 2),
            Some("!=") => (Op::Nomatch, 2),
            Some("+=" | "-=" | ":=") => (Op::Assign, 2),
            _ if rest.starts_with('=') => (Op::Assign, 1),
            _ => return Err(format!("{key}: no operator")),
        };
        rest = rest[len..].trim_start();
        rest = rest.strip_prefix('e').unwrap_or(rest);
        let body = rest
            .strip_prefix('"')
            .ok_or_else(|| format!("{key}: its value is not quoted"))?;
        let (value, after) = quoted(body).ok_or_else(|| format!("{key}: its value has no end"))?;
        out.push(Token {
            key,
            attr,
            op,
            value,
        });
        rest = after;
    }
}

/// A quoted value up to its closing quote (a `\"` or `\\` inside taken as the character), and
/// what follows it.
fn quoted(body: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut chars = body.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((value, &body[i + 1..])),
            '\\' => match chars.next() {
                Some((_, n @ ('"' | '\\'))) => value.push(n),
                Some((_, n)) => {
                    value.push('\\');
                    value.push(n);
                }
                None => return None,
            },
            c => value.push(c),
        }
    }
    None
}

/// True if and only if `value` matches udev's `pattern`: alternatives separated by `|`, each a
/// shell glob (`*`, `?`, `[...]`, as `fnmatch` without flags).
pub(crate) fn matches(pattern: &str, value: &str) -> bool {
    pattern.split('|').any(|alt| {
        let p: Vec<char> = alt.chars().collect();
        let v: Vec<char> = value.chars().collect();
        glob(&p, &v)
    })
}

fn glob(p: &[char], v: &[char]) -> bool {
    match p.first() {
        None => v.is_empty(),
        Some('*') => (0..=v.len()).any(|i| glob(&p[1..], &v[i..])),
        Some('?') => !v.is_empty() && glob(&p[1..], &v[1..]),
        Some('[') => match (p.iter().position(|&c| c == ']'), v.first()) {
            (Some(close), Some(&c)) if close > 1 => {
                let set = &p[1..close];
                let (negated, set) = match set.first() {
                    Some('!' | '^') => (true, &set[1..]),
                    _ => (false, set),
                };
                let mut hit = false;
                let mut i = 0;
                while i < set.len() {
                    if i + 2 < set.len() && set[i + 1] == '-' {
                        hit |= set[i] <= c && c <= set[i + 2];
                        i += 3;
                    } else {
                        hit |= set[i] == c;
                        i += 1;
                    }
                }
                hit != negated && glob(&p[close + 1..], &v[1..])
            }
            _ => v.first() == Some(&'[') && glob(&p[1..], &v[1..]),
        },
        Some(&c) => v.first() == Some(&c) && glob(&p[1..], &v[1..]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn active_lines_skip_comments_and_blanks_and_join_continuations() {
        let text = "# a comment\n\n  A==\"1\", \\\n# inside\n   B==\"2\"\n#C==\"3\"\nD==\"4\"\n";
        assert_eq!(active_lines(text), ["A==\"1\", B==\"2\"", "D==\"4\""]);
    }

    #[test]
    fn tokens_read_keys_attributes_operators_and_quoted_values() {
        let t =
            tokens("SUBSYSTEM==\"block\", ENV{DEVTYPE}!=\"x\",RUN+=\"/a \\\"b\\\" %k\"").unwrap();
        assert_eq!(t.len(), 3);
        assert_eq!((t[0].key.as_str(), t[0].op), ("SUBSYSTEM", Op::Match));
        assert_eq!(
            (t[1].attr.as_deref(), t[1].op),
            (Some("DEVTYPE"), Op::Nomatch)
        );
        assert_eq!((t[2].op, t[2].value.as_str()), (Op::Assign, "/a \"b\" %k"));
        assert!(tokens("RUN+=/bin/x").is_err());
        assert!(tokens("RUN+=\"/bin/x").is_err());
    }

    #[test]
    fn patterns_match_as_udev_matches_them() {
        assert!(matches("add|change", "change"));
        assert!(!matches("remove", "add"));
        assert!(matches("md*", "md127") && matches("md[0-9]*", "md0") && matches("m?0", "md0"));
        assert!(!matches("sd*", "md0") && !matches("md[!0-9]*", "md0"));
    }
}
