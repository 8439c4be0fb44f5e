use super::*;
use crate::host::{Health, Sync};

/// Array md0 reading `action`, `[done, total]`, `last_sync_action`, `mismatch_cnt`, `sync_min`,
/// `sync_max`.
fn md0(
    action: &str,
    completed: Option<[u64; 2]>,
    last: &str,
    mm: u64,
    min: u64,
    max: &str,
) -> Array {
    Array {
        name: "md0".into(),
        uuid: Some("ab".repeat(16)),
        level: "raid5".into(),
        sync: Some(Sync {
            action: action.into(),
            completed,
            ..Sync::default()
        }),
        health: Some(Health {
            degraded: Some(0),
            mismatch_cnt: Some(mm),
            last_sync_action: Some(last.into()),
            sync_min: Some(min),
            sync_max: Some(max.into()),
        }),
        ..Array::default()
    }
}

/// Runs ticks over `readings` (one array each), 60 s apart: every check recorded.
fn ticks(readings: &[Array]) -> Vec<Check> {
    let mut state = TickState::default();
    let mut out = Vec::new();
    for (i, a) in readings.iter().enumerate() {
        let (next, checks) = evaluate(&state, std::slice::from_ref(a), 1000 + 60 * i as u64);
        state = next;
        out.extend(checks);
    }
    out
}

#[test]
fn a_check_seen_from_sector_0_to_its_end_is_whole() {
    let got = ticks(&[
        md0("idle", None, "none", 0, 0, "max"),
        md0("check", Some([8, 1000]), "check", 0, 0, "max"),
        md0("check", Some([800, 1000]), "check", 0, 0, "max"),
        md0("idle", None, "check", 16, 0, "max"),
        md0("idle", None, "check", 16, 0, "max"),
    ]);
    assert_eq!(got.len(), 1, "{got:?}");
    let c = &got[0];
    assert!(c.whole, "{c:?}");
    assert_eq!((c.action.as_str(), c.mismatch_cnt), ("check", Some(16)));
    assert_eq!((c.started_unix, c.end_unix), (Some(1060), 1180));
    assert_eq!(c.range, [Some(0), Some(1000)]);
}

#[test]
fn an_interrupted_check_keeps_its_place_in_sync_min_and_is_not_whole() {
    let got = ticks(&[
        md0("check", Some([8, 1000]), "check", 0, 0, "max"),
        md0("idle", None, "check", 0, 400, "max"),
    ]);
    assert!(!got[0].whole);
    assert_eq!(
        got[0].why_not_whole.as_deref(),
        Some("interrupted at sector 400")
    );
    assert_eq!(got[0].range, [Some(0), Some(400)]);
}

#[test]
fn an_mdcheck_window_is_not_whole_even_when_it_reaches_its_end() {
    let got = ticks(&[
        md0("check", Some([500, 1000]), "check", 0, 400, "600"),
        md0("idle", None, "check", 0, 0, "max"),
    ]);
    assert!(!got[0].whole);
    let why = got[0].why_not_whole.as_deref().unwrap();
    assert!(
        why.contains("window") && why.contains("400") && why.contains("600"),
        "{why}"
    );
    assert_eq!(got[0].range, [Some(400), Some(600)]);
}

#[test]
fn a_pause_is_not_an_end_and_keeps_the_start_first_seen() {
    let got = ticks(&[
        md0("check", Some([8, 1000]), "check", 0, 0, "max"),
        md0("frozen", None, "check", 0, 0, "max"),
        md0("check", Some([600, 1000]), "check", 0, 592, "max"),
        md0("idle", None, "check", 0, 0, "max"),
    ]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].whole, "{:?}", got[0]);
}

#[test]
fn a_check_between_two_ticks_is_seen_by_last_sync_action_and_mismatch_cnt() {
    let got = ticks(&[
        md0("idle", None, "none", 0, 0, "max"),
        md0("idle", None, "check", 0, 0, "max"),
        md0("idle", None, "check", 0, 0, "max"),
        md0("idle", None, "repair", 8, 0, "max"),
    ]);
    let actions: Vec<(&str, bool)> = got.iter().map(|c| (c.action.as_str(), c.whole)).collect();
    assert_eq!(actions, [("check", false), ("repair", false)]);
    assert_eq!(got[0].range, [None, None]);
}

#[test]
fn the_first_tick_only_watches_and_a_resync_records_nothing() {
    assert!(ticks(&[md0("idle", None, "check", 8, 0, "max")]).is_empty());
    let got = ticks(&[
        md0("resync", Some([8, 1000]), "resync", 0, 0, "max"),
        md0("idle", None, "resync", 0, 0, "max"),
    ]);
    assert!(got.is_empty(), "{got:?}");
}

#[test]
fn a_check_followed_by_another_sync_has_no_mismatch_count() {
    let got = ticks(&[
        md0("check", Some([8, 1000]), "check", 0, 0, "max"),
        md0("recover", Some([8, 1000]), "recover", 5, 0, "max"),
    ]);
    assert_eq!(got[0].mismatch_cnt, None);
    assert!(!got[0].whole);
}
