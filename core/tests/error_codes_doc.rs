//! `docs/error-codes.md` stays in step with `ErrorCode`: every code has one row in the table
//! with its retryable default, no row names a code that does not exist, and other apps'
//! codes are all mapped.

use tooljig::ErrorCode;

fn doc() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/error-codes.md");
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// `(code, retryable)` of each row of the "The codes" table.
fn rows(doc: &str) -> Vec<(String, String)> {
    let table = doc
        .split("## The codes")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("a \"## The codes\" section");
    table
        .lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split('|').map(str::trim).collect();
            let code = cells.get(1)?.strip_prefix('`')?.strip_suffix('`')?;
            Some((code.to_string(), cells.get(3)?.to_string()))
        })
        .collect()
}

#[test]
fn every_code_is_documented_with_its_retryable_default() {
    let doc = doc();
    let rows = rows(&doc);
    for &code in ErrorCode::ALL {
        let found: Vec<_> = rows.iter().filter(|(c, _)| c == code.as_str()).collect();
        assert_eq!(
            found.len(),
            1,
            "`{code}` must have exactly one row in docs/error-codes.md"
        );
        let want = if code.default_retryable() {
            "yes"
        } else {
            "no"
        };
        assert_eq!(
            found[0].1, want,
            "`{code}`: the doc says retryable {:?}",
            found[0].1
        );
    }
    for (code, _) in &rows {
        assert!(
            code.parse::<ErrorCode>().is_ok(),
            "docs/error-codes.md documents `{code}`, which is not an ErrorCode"
        );
    }
}

#[test]
fn other_apps_codes_are_mapped() {
    let doc = doc();
    let mapping = doc
        .split("## Mapping from the codes apps already use")
        .nth(1)
        .expect("a mapping section");
    for app_code in [
        "UNAUTHORIZED",
        "SCOPES_MISSING",
        "CONNECTION_INACTIVE",
        "RATE_LIMITED",
        "permission_denied",
        "validation_error",
        "resource_not_found",
        "external_api_error",
        "system_error",
    ] {
        assert!(
            mapping.contains(&format!("`{app_code}`")),
            "the app code {app_code} is not mapped"
        );
    }
    // Every code in the "tooljig" column is a real one (or the `needs` envelope).
    let mut mapped = 0;
    for line in mapping.lines().filter(|l| l.starts_with('|')).skip(2) {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let target = cells.get(3).expect("a row has a tooljig column");
        for word in target.split('`').skip(1).step_by(2) {
            let is_name = word.chars().all(|c| c.is_ascii_lowercase() || c == '_');
            if is_name && word != "needs" {
                assert!(
                    word.parse::<ErrorCode>().is_ok(),
                    "the mapping points to `{word}`, which is not an ErrorCode"
                );
                mapped += 1;
            }
        }
    }
    assert!(mapped > 0, "the mapping table names no tooljig code");
}
