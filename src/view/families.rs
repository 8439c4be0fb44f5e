//! The families of an exposition (`super::metrics`), in the order they are first met, each with
//! its HELP and TYPE lines and its samples together, every label value escaped for the format.

/// The families in the order they are first met: each name with its text so far (its HELP and
/// TYPE lines, then its samples), so that a family's samples stay together.
#[derive(Default)]
pub(super) struct Families {
    /// Each family's name and text.
    pub(super) list: Vec<(String, String)>,
}

impl Families {
    /// Adds one sample of `name` (a gauge described by `help`) with `labels`, whose values are
    /// escaped for the format (backslash, double quote, newline).
    pub(super) fn add(&mut self, name: &str, help: &str, labels: &[(&str, &str)], value: &str) {
        let i = match self.list.iter().position(|(n, _)| n == name) {
            Some(i) => i,
            None => {
                let head = format!("# HELP {name} {help}\n# TYPE {name} gauge\n");
                self.list.push((name.to_string(), head));
                self.list.len() - 1
            }
        };
        let out = &mut self.list[i].1;
        out.push_str(name);
        for (j, (k, v)) in labels.iter().enumerate() {
            out.push(if j == 0 { '{' } else { ',' });
            out.push_str(k);
            out.push_str("=\"");
            for c in v.chars() {
                match c {
                    '\\' => out.push_str("\\\\"),
                    '"' => out.push_str("\\\""),
                    '\n' => out.push_str("\\n"),
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        if !labels.is_empty() {
            out.push('}');
        }
        out.push(' ');
        out.push_str(value);
        out.push('\n');
    }
}
