//! Adding a tunable: every row of the table (`mdtune::md::tunables`) reaches the schema, the
//! Ansible options, the SUSE Manager form and the reference's table, with the same range. A
//! new row whose docs were not written fails here, naming what lacks it.

use super::{ansible, keys, name, others, range, schema};
use mdtune::md::{tunables, Place};

#[test]
fn every_tunable_of_the_table_is_in_the_schema_and_the_forms_with_its_range() {
    let s = schema();
    let mut missing = Vec::new();
    for t in tunables() {
        let part = match t.place {
            Place::Array(_) => "array_entry",
            Place::System => "input",
        };
        let Some(k) = keys(&s, part).into_iter().find(|k| name(k) == t.name) else {
            missing.push(format!("mdtune --schema: {}: missing from {part}", t.name));
            continue;
        };
        let want = (t.kind != mdtune::md::Kind::Bool).then(|| format!("{}..{}", t.min, t.max));
        if range(&k) != want {
            missing.push(format!(
                "mdtune --schema: {}: range {:?}, not {want:?}",
                t.name,
                range(&k)
            ));
        }
    }
    // The forms, each held to the schema, and so to the table.
    for p in [ansible(&s), others::suma_form(&s), others::reference(&s)] {
        missing.extend(p.list);
    }
    assert!(missing.is_empty(), "{}", missing.join("\n"));
}
