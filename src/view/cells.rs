//! The pieces both views are made of: a JSON value as a person reads it, a level, sync
//! progress, and left-aligned columns.

use serde_json::Value as Json;

/// A JSON value as a person reads it: strings unquoted, `null` as `-`.
pub(super) fn shown(v: &Json) -> String {
    match v {
        Json::String(s) => s.clone(),
        Json::Null => "-".into(),
        v => v.to_string(),
    }
}

/// A table cell: the value, or `-` when it is null or empty.
pub(super) fn cell(v: &Json) -> String {
    match v {
        Json::String(s) if s.is_empty() => "-".into(),
        v => shown(v),
    }
}

/// `idle`, or the action with its progress: `resync 25%`.
pub(super) fn sync(s: &Json) -> String {
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
pub(super) struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    pub(super) fn new(header: &[&str]) -> Table {
        Table {
            rows: vec![header.iter().map(|h| h.to_string()).collect()],
        }
    }

    pub(super) fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub(super) fn render(&self) -> String {
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

/// The level, or `container` (external metadata) or `-` for what has none.
pub(super) fn level(a: &Json) -> String {
    match a["level"].as_str() {
        Some(l) if !l.is_empty() => l.to_string(),
        _ if a["metadata_version"]
            .as_str()
            .is_some_and(|m| m.starts_with("external:")) =>
        {
            "container".into()
        }
        _ => "-".into(),
    }
}
