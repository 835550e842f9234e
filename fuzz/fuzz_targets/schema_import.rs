//! Tool definitions from anywhere (OpenAI function specs, BFCL docs, tooljig's own spec
//! format): importing and registering never panics, and whatever imports registers or is
//! refused with a registration error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use tooljig::import::{bfcl, openai};
use tooljig::{Registry, Tool, ToolSpec};

fuzz_target!(|text: &str| {
    let Ok(doc) = serde_json::from_str::<Value>(text) else {
        return;
    };
    let mut specs: Vec<ToolSpec> = Vec::new();
    specs.extend(openai::from_openai(&doc).ok());
    specs.extend(openai::from_openai_list(&doc).unwrap_or_default());
    specs.extend(bfcl::from_bfcl(&doc).ok());
    specs.extend(ToolSpec::from_value(doc.clone()).ok());
    let registry = Registry::default();
    for spec in specs {
        // An imported spec exports again as an OpenAI definition.
        let exported = openai::to_openai(&spec);
        assert!(exported.is_object(), "{exported}");
        let _ = registry.register(Tool::external(spec));
    }
    // The spec's schema as any JSON value, validated against one argument value.
    let schema = json!({"type": "object", "properties": {"x": doc}});
    if let Ok(compiled) = tooljig::schema::CompiledSchema::compile(&schema, &Default::default()) {
        let _ = compiled.check(&json!({"x": text}));
    }
});
