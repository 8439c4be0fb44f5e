//! The decisions of a sync boost, pure: whether a recorded boost is over, what its end puts back
//! and what it leaves alone, and which values before the boost a record keeps.

use crate::host::BoostRecord;
use crate::md::sync::FREEZE;
use crate::md::{Attr, Value};
use crate::plan::BoostPlan;
use std::collections::BTreeMap;

/// True if and only if the boost of `rec` is over, `action` being what `md/sync_action` of its
/// array reads now (`None`: the array is gone, or no longer redundant). A frozen sync (a pause)
/// is not over: it runs again.
pub(crate) fn is_over(rec: &BoostRecord, action: Option<&str>) -> bool {
    match action.map(str::trim) {
        None => true,
        Some(FREEZE) => false,
        Some(a) => !rec.during.iter().any(|d| d == a),
    }
}

/// What the end of a boost does to one setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// It still reads the boost's value: the value before the boost comes back.
    Restore { boost: Value, saved: Value },
    /// Someone changed it meanwhile (it reads `live`, not the boost's value): left alone.
    LeftAlone { live: Value, boost: Value },
}

/// What the end of the boost of `rec` does, setting by setting, given the values `live` now
/// (a setting that cannot be read is left as it is, and out of the answer).
pub(crate) fn ending(rec: &BoostRecord, live: &BTreeMap<Attr, Value>) -> Vec<(Attr, End)> {
    let saved = rec.saved_values();
    rec.boost_values()
        .into_iter()
        .filter_map(|(attr, boost)| {
            let (&live, &saved) = (live.get(&attr)?, saved.get(&attr)?);
            let end = if live == boost {
                End::Restore { boost, saved }
            } else {
                End::LeftAlone { live, boost }
            };
            Some((attr, end))
        })
        .collect()
}

/// The values before the boost that its record keeps: the steady state the plan says (the
/// entry's plain value, else the value in force) for a boost that starts; for one already in
/// force, what its record kept, except where the entry gives a plain value (the new steady state).
pub(crate) fn saved_for(rec: Option<&BoostRecord>, bp: &BoostPlan) -> BTreeMap<Attr, Value> {
    let kept = rec.map(BoostRecord::saved_values).unwrap_or_default();
    bp.values
        .keys()
        .map(|&attr| {
            let steady = bp.steady[&attr];
            let value = match (bp.plain.contains_key(&attr), kept.get(&attr)) {
                (false, Some(&kept)) => kept,
                _ => steady,
            };
            (attr, value)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::untyped;
    use crate::plan::Source;

    fn rec(during: &[&str]) -> BoostRecord {
        let boost = BTreeMap::from([
            (Attr::SyncSpeedMin, Value::Int(500_000)),
            (Attr::SyncSpeedMax, Value::Int(900_000)),
        ]);
        let saved = BTreeMap::from([
            (Attr::SyncSpeedMin, Value::Int(50_000)),
            (Attr::SyncSpeedMax, Value::System),
        ]);
        BoostRecord {
            array: "md0".into(),
            action: "resync".into(),
            during: during.iter().map(|d| (*d).to_string()).collect(),
            values: untyped(&boost),
            saved: untyped(&saved),
            since: 1,
        }
    }

    #[test]
    fn a_boost_is_over_when_no_sync_of_its_own_runs_and_a_pause_is_no_end() {
        let r = rec(&["resync", "recover"]);
        assert!(!is_over(&r, Some("resync\n")));
        assert!(!is_over(&r, Some("recover")));
        assert!(!is_over(&r, Some("frozen")));
        assert!(is_over(&r, Some("idle")));
        assert!(is_over(&r, Some("check")));
        assert!(is_over(&r, None));
    }

    #[test]
    fn the_end_restores_what_still_reads_the_boost_and_leaves_a_hand_change_alone() {
        let live = BTreeMap::from([
            (Attr::SyncSpeedMin, Value::Int(500_000)),
            (Attr::SyncSpeedMax, Value::Int(700_000)),
        ]);
        assert_eq!(
            ending(&rec(&["resync"]), &live),
            [
                (
                    Attr::SyncSpeedMin,
                    End::Restore {
                        boost: Value::Int(500_000),
                        saved: Value::Int(50_000)
                    }
                ),
                (
                    Attr::SyncSpeedMax,
                    End::LeftAlone {
                        live: Value::Int(700_000),
                        boost: Value::Int(900_000)
                    }
                ),
            ]
        );
    }

    #[test]
    fn a_record_keeps_its_values_before_the_boost_unless_a_plain_value_is_given() {
        let mut bp = BoostPlan {
            source: Source::Entry(0),
            during: vec!["resync".into()],
            values: BTreeMap::from([
                (Attr::SyncSpeedMin, Value::Int(500_000)),
                (Attr::SyncSpeedMax, Value::Int(900_000)),
            ]),
            active: true,
            // Boosted already: the live values are the boost's.
            steady: BTreeMap::from([
                (Attr::SyncSpeedMin, Value::Int(60_000)),
                (Attr::SyncSpeedMax, Value::Int(900_000)),
            ]),
            plain: BTreeMap::from([(Attr::SyncSpeedMin, Value::Int(60_000))]),
            saved: None,
            since: None,
        };
        let kept = saved_for(Some(&rec(&["resync"])), &bp);
        assert_eq!(kept[&Attr::SyncSpeedMin], Value::Int(60_000));
        assert_eq!(kept[&Attr::SyncSpeedMax], Value::System);
        bp.plain.clear();
        let new = saved_for(None, &bp);
        assert_eq!(new[&Attr::SyncSpeedMax], Value::Int(900_000));
    }
}
