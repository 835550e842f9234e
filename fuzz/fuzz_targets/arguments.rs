//! Argument text as a model may send it: parsing never panics, strict JSON comes back as
//! itself and unrepaired, and the repairer alone never panics either.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use tooljig::Limits;
use tooljig::arguments::{parse_text, repair_json};

fuzz_target!(|text: &str| {
    let parsed = parse_text(text, &Limits::default());
    if let (Ok(parsed), Ok(strict)) = (&parsed, serde_json::from_str::<Value>(text)) {
        assert_eq!(parsed.value, strict, "strict JSON changed: {text:?}");
        assert!(!parsed.repaired, "strict JSON marked repaired: {text:?}");
    }
    let _ = repair_json(text);
});
