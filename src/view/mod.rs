//! Text for people (docs/reference.md §1): `mdtune --show`, a read-only view of the host, and
//! `mdtune --text`, a run's report. Both are rendered from JSON the run already made (the report,
//! and for `--show` the host facts beside it), so the text says nothing the JSON does not. Pure:
//! strings in, a string out. Not for machines: the JSON stays the interface.

mod show;
mod text;

pub use show::host;
pub use text::report;

use serde_json::Value as Json;

/// A JSON value as a person reads it: strings unquoted, `null` as `-`.
fn shown(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "-".into(),
        v => v.to_string(),
    }
}

/// A table cell: the value, or `-` when it is null or empty.
fn cell(v: &Json) -> String {
    match v {
        Json::String(s) if s.is_empty() => "-".into(),
        v => shown(v),
    }
}

/// `idle`, or the action with its progress: `resync 25%`.
fn sync(s: &Json) -> String {
    let action = match s["action"].as_str() {
        Some(a) => a,
        None => return "-".into(),
    };
    match s["completed"]
        .as_array()
        .map(|c| (c[0].as_u64(), c[1].as_u64()))
    {
        Some((Some(done), Some(total))) if total > 0 => {
            format!("{action} {}%", done.saturating_mul(100) / total)
        }
        _ => action.to_string(),
    }
}

/// Left-aligned columns two spaces apart.
struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    fn render(&self) -> String {
        let mut width = Vec::new();
        for r in &self.rows {
            for (i, c) in r.iter().enumerate() {
                if width.len() <= i {
                    width.push(0);
                }
                width[i] = width[i].max(c.chars().count());
            }
        }
        let mut out = String::new();
        for r in &self.rows {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                line.push_str(c);
                if i + 1 < r.len() {
                    line.push_str(&" ".repeat(width[i] - c.chars().count() + 2));
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}
