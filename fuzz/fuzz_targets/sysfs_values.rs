//! Parsing of what the kernel prints: `md::parse_value` for each kind, `parse_progress` and the CPU
//! lists and masks (`CpuSet`), on arbitrary text ("50000 (local)", empty files, garbage, numbers
//! beyond 64 bits) and on text built from the kernel's own formats. Never panics; whatever parses
//! has the attribute's kind; what mdtune writes reads back as the value it wrote (the read-back
//! check in apply relies on that); surrounding whitespace never changes a value.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use mdtune::md::{parse_progress, parse_value, CpuSet, Kind, Value};

const KINDS: [Kind; 4] = [Kind::Int, Kind::CInt, Kind::Bool, Kind::SyncSpeed];

fn check(text: &str) {
    for kind in KINDS {
        let v = parse_value(kind, text);
        assert_eq!(
            parse_value(kind, &format!(" \t{text}\n")),
            v,
            "{kind:?} {text:?}"
        );
        let Some(v) = v else { continue };
        let right_kind = matches!(
            (kind, v),
            (Kind::Int, Value::Int(_))
                | (Kind::Bool, Value::Bool(_))
                | (Kind::CInt, Value::Int(_) | Value::Negative(_))
                | (
                    Kind::SyncSpeed,
                    Value::Int(_) | Value::Negative(_) | Value::System
                )
        );
        if let Value::Negative(n) = v {
            assert!(n < 0, "{kind:?} {text:?} parsed as {v:?}");
        }
        assert!(right_kind, "{kind:?} {text:?} parsed as {v:?}");
        let written = format!("{}\n", v.to_kernel());
        assert_eq!(parse_value(kind, &written), Some(v), "{kind:?} {text:?}");
    }
    if let Ok(n) = text.trim().parse::<u64>() {
        let p = |t: String| parse_value(Kind::SyncSpeed, &t);
        // A C int: 2^31..2^32 is how the kernel stores what it prints negative.
        let local = if (1u64 << 31..1u64 << 32).contains(&n) {
            Value::Negative(i64::from(n as u32 as i32))
        } else {
            Value::Int(n)
        };
        assert_eq!(p(format!("{n} (local)\n")), Some(local));
        assert_eq!(p(format!("{n} (system)\n")), Some(Value::System));
    }
    if let Some([done, total]) = parse_progress(text) {
        assert_eq!(
            parse_progress(&format!("{done} / {total}\n")),
            Some([done, total])
        );
    }
    if let Some(set) = CpuSet::from_list(text) {
        assert_eq!(CpuSet::from_list(&format!(" {text}\n")), Some(set.clone()));
        let parts = text.trim().split(',').filter(|p| !p.is_empty()).count() as u64;
        assert!(
            set.len() >= 1.min(parts),
            "{text:?}: {} CPUs in {parts} parts",
            set.len()
        );
        assert_eq!(set.and(&set), set);
        assert!(set.minus(&set).is_empty());
    }
    if let Some(set) = CpuSet::from_mask(text) {
        assert_eq!(CpuSet::from_mask(&format!(" {text}\n")), Some(set.clone()));
        assert!(set.len() <= 1 << 16, "{text:?}");
    }
}

/// Text in one of the kernel's formats, with arbitrary numbers and suffixes.
fn kernel_like(u: &mut Unstructured) -> arbitrary::Result<String> {
    let n = |u: &mut Unstructured| -> arbitrary::Result<String> {
        Ok(match u.int_in_range(0..=3u8)? {
            0 => u.arbitrary::<u64>()?.to_string(),
            1 => u.arbitrary::<i64>()?.to_string(),
            2 => format!("{}{}", u64::MAX, u.int_in_range(0..=9u8)?),
            _ => u.arbitrary::<u8>()?.to_string(),
        })
    };
    Ok(match u.int_in_range(0..=7u8)? {
        0 => n(u)?,
        1 => format!("{} (local)", n(u)?),
        2 => format!("{} (system)", n(u)?),
        3 => format!("{} ({})", n(u)?, u.arbitrary::<&str>()?),
        4 => format!("{} / {}", n(u)?, n(u)?),
        5 => format!("{}-{},{}", n(u)?, n(u)?, n(u)?),
        6 => (*u.choose(&["none", "delayed", "system", "", "max", "idle"])?).to_string(),
        _ => format!("{}{}", n(u)?, u.arbitrary::<&str>()?),
    })
}

fuzz_target!(|data: &[u8]| {
    // sysfs::read returns text only for UTF-8 files; anything else is a read error earlier.
    if let Ok(text) = std::str::from_utf8(data) {
        check(text);
    }
    let mut u = Unstructured::new(data);
    while let Ok(text) = kernel_like(&mut u) {
        check(&text);
        if u.is_empty() {
            break;
        }
    }
});
