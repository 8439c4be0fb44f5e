//! What the report says of a run whose writes failed (docs/reference.md §3): the `msg` becomes
//! the error, then what the rollback put back, what it could not (each with the value the kernel
//! holds now) or that no value is left changed, a paused sync that could not be resumed, and the
//! persisted files a failed undo left; and the `rolled_back` and `not_restored` fields. Pure. A
//! run that did not fail gets its `msg` from `super::msg`.

use super::model::Restored;
use crate::apply::{Failure, NotRestored, Target, Write};

/// The parts of the report a failure decides.
#[derive(Debug)]
pub(super) struct FailureText {
    pub(super) msg: String,
    pub(super) rolled_back: Vec<Restored>,
    /// Present when a value could not be put back: one text per value.
    pub(super) not_restored: Option<Vec<String>>,
}

/// What to say of `f`; `left` holds the persisted files a failed undo left (each with why).
pub(super) fn failure(f: &Failure, left: &[String]) -> FailureText {
    let mut msg = f.error.to_string();
    if !f.rolled_back.is_empty() {
        let what: Vec<String> = f.rolled_back.iter().map(|w| w.target.to_string()).collect();
        msg.push_str(&format!("; rolled back: {}", what.join(", ")));
    }
    let not_restored: Vec<String> = f.not_restored.iter().map(not_restored_text).collect();
    if not_restored.is_empty() {
        msg.push_str("; no value is left changed");
    } else {
        msg.push_str(&format!("; NOT RESTORED: {}", not_restored.join("; ")));
    }
    // A sync paused for the writes that could not be resumed: said, with how to resume it.
    if !f.not_resumed.is_empty() {
        msg.push_str(&format!("; NOT RESUMED: {}", f.not_resumed.join("; ")));
    }
    // A failed persist whose undo failed: these files still hold the new state.
    if !left.is_empty() {
        msg.push_str(&format!("; NOT UNDONE: {}", left.join("; ")));
    }
    FailureText {
        msg,
        rolled_back: f.rolled_back.iter().map(restored).collect(),
        not_restored: (!not_restored.is_empty()).then_some(not_restored),
    }
}

fn restored(w: &Write) -> Restored {
    let (target, setting) = match &w.target {
        Target::Md { array, attr } => (array.clone(), attr.name().to_string()),
        Target::Limit(l) => ("system".to_string(), l.name().to_string()),
    };
    Restored {
        target,
        setting,
        value: w.before,
    }
}

/// A value a rollback could not put back, with the value the kernel holds now.
fn not_restored_text(n: &NotRestored) -> String {
    let (w, e) = (&n.write, &n.error);
    match n.now {
        Some(now) if now == w.after => {
            format!("{} is still {} (was {}): {e}", w.target, w.after, w.before)
        }
        Some(now) => format!(
            "{} is {now} (was {}, this run wrote {}): {e}",
            w.target, w.before, w.after
        ),
        None => format!(
            "{} holds a value that cannot be read back (was {}, this run wrote {}): {e}",
            w.target, w.before, w.after
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::apply::ApplyError;
    use crate::md::{Attr, SpeedLimit, Value};
    use std::io;

    fn md0(attr: Attr, before: u64, after: u64) -> Write {
        Write {
            target: Target::Md {
                array: "md0".into(),
                attr,
            },
            before: Value::Int(before),
            after: Value::Int(after),
        }
    }

    fn refused(target: Target) -> ApplyError {
        ApplyError::Write {
            target,
            value: Value::Int(1),
            source: io::Error::from_raw_os_error(22),
        }
    }

    fn not_restored(write: Write, now: Option<u64>) -> NotRestored {
        NotRestored {
            error: refused(write.target.clone()),
            write,
            now: now.map(Value::Int),
        }
    }

    #[test]
    fn a_full_rollback_names_the_error_what_was_put_back_and_that_nothing_is_left() {
        let f = Failure {
            error: refused(Target::Limit(SpeedLimit::Max)),
            rolled_back: vec![md0(Attr::GroupThreadCnt, 0, 8)],
            not_restored: Vec::new(),
            not_resumed: Vec::new(),
        };
        let t = failure(&f, &[]);
        assert_eq!(
            t.msg,
            "system: speed_limit_max: the kernel refused 1: Invalid argument (os error 22); \
             rolled back: md0: group_thread_cnt; no value is left changed"
        );
        assert_eq!(t.rolled_back.len(), 1);
        let r = &t.rolled_back[0];
        assert_eq!(
            (r.target.as_str(), r.setting.as_str(), r.value),
            ("md0", "group_thread_cnt", Value::Int(0))
        );
        assert!(t.not_restored.is_none());
    }

    #[test]
    fn what_a_rollback_could_not_put_back_is_named_with_the_value_in_place_now() {
        let f = Failure {
            error: refused(Target::Limit(SpeedLimit::Max)),
            rolled_back: Vec::new(),
            not_restored: vec![
                not_restored(md0(Attr::GroupThreadCnt, 0, 8), Some(8)),
                not_restored(md0(Attr::StripeCacheSize, 256, 4096), Some(512)),
                not_restored(md0(Attr::PrereadBypassThreshold, 1, 0), None),
            ],
            not_resumed: Vec::new(),
        };
        let left = ["/etc/mdtune/mdtune.json: busy".to_string()];
        let t = failure(&f, &left);
        let texts = t.not_restored.expect("not_restored");
        let e = "the kernel refused 1: Invalid argument (os error 22)";
        assert_eq!(
            texts,
            [
                format!("md0: group_thread_cnt is still 8 (was 0): md0: group_thread_cnt: {e}"),
                format!(
                    "md0: stripe_cache_size is 512 (was 256, this run wrote 4096): \
                     md0: stripe_cache_size: {e}"
                ),
                format!(
                    "md0: preread_bypass_threshold holds a value that cannot be read back \
                     (was 1, this run wrote 0): md0: preread_bypass_threshold: {e}"
                ),
            ]
        );
        assert!(t
            .msg
            .contains(&format!("; NOT RESTORED: {}", texts.join("; "))));
        assert!(t
            .msg
            .ends_with("; NOT UNDONE: /etc/mdtune/mdtune.json: busy"));
        assert!(!t.msg.contains("no value is left changed"));
    }
}
