//! Plan snapshots: the logical plan of every question file marked `plan = true`, as the lowering
//! builds it and as DataFusion's optimizer leaves it (and the lowered plans of the rows a `with`
//! projection attaches), recorded under `tests/plans/` with insta,
//! so a change to the lowering or to the planner shows in review as a diff of these files.
//! (The plans are over the SQLite source, in UTC; physical plans are not recorded, since their
//! partitioning follows the machine's cores.)

use crate::support::questions;
use crate::support::runtime;

#[test]
fn plans_of_the_marked_questions() {
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("archive.db");
    // An empty, migrated archive: plans do not depend on the rows.
    drop(quarry_archive::Archive::open(&archive).unwrap());
    let mut options = quarry::Options::new(&archive);
    options.tz = Some("UTC".into());
    options.source = quarry::SourceChoice::Sqlite;
    let quarry = quarry::Quarry::open(&options).unwrap();
    let rt = runtime();
    let marked: Vec<_> = questions::checked()
        .into_iter()
        .filter(|q| q.plan)
        .collect();
    assert!(
        marked.len() >= 20,
        "{} questions marked for plan snapshots",
        marked.len()
    );
    for q in marked {
        let query = q.quarry.as_deref().unwrap();
        let plans = rt
            .block_on(quarry.logical_plans(query))
            .unwrap_or_else(|e| panic!("{}: {e}", q.name));
        let mut text = format!(
            "{query}\n\n-- lowered\n{}\n\n-- optimized\n{}\n",
            plans.lowered, plans.optimized
        );
        for attached in &plans.attached {
            text.push_str(&format!("\n-- attached (lowered) {attached}\n"));
        }
        insta::with_settings!({
            snapshot_path => "plans",
            prepend_module_to_snapshot => false,
            omit_expression => true,
            description => q.question.clone(),
        }, {
            insta::assert_snapshot!(q.name.clone(), text);
        });
    }
}
