//! `docs/language.md` carries the field table generated from the registry; this test fails when
//! they drift. Regenerate with `QUARRY_BLESS_DOCS=1 cargo test -p quarry-grammar docs`.

const BEGIN: &str =
    "<!-- BEGIN GENERATED FIELD TABLE (quarry_grammar::docs::render_field_table) -->";
const END: &str = "<!-- END GENERATED FIELD TABLE -->";

#[test]
fn language_doc_field_table_matches_registry() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/language.md");
    let doc = std::fs::read_to_string(&path).expect("docs/language.md exists");
    let start = doc.find(BEGIN).expect("begin marker") + BEGIN.len();
    let end = doc.find(END).expect("end marker");
    let committed = doc[start..end].trim();
    let generated = quarry_grammar::docs::render_field_table();
    if committed != generated.trim() {
        if std::env::var("QUARRY_BLESS_DOCS").is_ok() {
            let fixed = format!("{}\n\n{}\n{}", &doc[..start], generated.trim(), &doc[end..]);
            std::fs::write(&path, fixed).unwrap();
            return;
        }
        panic!(
            "docs/language.md field table drifted from the registry; run QUARRY_BLESS_DOCS=1 cargo test -p quarry-grammar docs"
        );
    }
}
