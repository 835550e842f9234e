//! Finding tools by what a request says, for registries too large to hand a model whole.
//!
//! A lexical index (BM25, from the `bm25` crate: English stemming and stop words) over each
//! tool's name (split at `_`, `.`, `-` and camel case), description, and its parameters' names
//! and descriptions. [`crate::Engine::search_tools`] answers the specs a caller may use that
//! best match a query; [`crate::Engine::tool_search`] is the same as a tool (`search_tools`)
//! the model can call to find the tools it was not offered. The index is built once per set of
//! tools, on the first search after a change.

use crate::spec::ToolSpec;
use bm25::{Language, SearchEngine, SearchEngineBuilder};
use serde_json::Value;

/// A BM25 index of tool specs.
pub struct ToolIndex {
    engine: SearchEngine<u32>,
}

impl ToolIndex {
    /// Indexes `specs`; a result's id is the spec's position in them.
    pub fn new(specs: &[ToolSpec]) -> Self {
        let documents = specs
            .iter()
            .enumerate()
            .map(|(i, spec)| bm25::Document::new(i as u32, text_of(spec)));
        let engine =
            SearchEngineBuilder::<u32>::with_documents(Language::English, documents).build();
        ToolIndex { engine }
    }

    /// Positions of the specs that match `query`, best first, at most `limit`.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f32)> {
        self.engine
            .search(&words(query), limit)
            .into_iter()
            .map(|r| (r.document.id as usize, r.score))
            .collect()
    }
}

/// What a tool is found by.
fn text_of(spec: &ToolSpec) -> String {
    let mut text = words(&spec.name);
    if let Some(original) = &spec.original_name {
        text.push(' ');
        text.push_str(&words(original));
    }
    text.push(' ');
    text.push_str(&spec.description);
    let properties = spec
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    for (name, schema) in properties.into_iter().flatten() {
        text.push(' ');
        text.push_str(&words(name));
        if let Some(description) = schema.get("description").and_then(Value::as_str) {
            text.push(' ');
            text.push_str(description);
        }
    }
    text
}

/// An identifier as words: `get_weatherForecast.v2` → `get weather Forecast v2`.
fn words(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 8);
    let mut previous_lower = false;
    for c in s.chars() {
        if matches!(c, '_' | '.' | '-' | '/') {
            out.push(' ');
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower {
            out.push(' ');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(name: &str, description: &str, properties: Value) -> ToolSpec {
        ToolSpec::new(
            name,
            description,
            json!({"type": "object", "properties": properties}),
        )
    }

    #[test]
    fn names_descriptions_and_parameters_are_searched() {
        let specs = [
            spec(
                "get_weather",
                "Current weather of a city.",
                json!({"city": {"type": "string"}}),
            ),
            spec(
                "sendEmail",
                "Sends a message.",
                json!({"recipient": {"description": "Email address"}}),
            ),
            spec(
                "book_table",
                "Reserves a restaurant table.",
                json!({"party_size": {}}),
            ),
        ];
        let index = ToolIndex::new(&specs);
        assert_eq!(index.search("what's the weather in Paris", 3)[0].0, 0);
        assert_eq!(index.search("email Ana", 3)[0].0, 1);
        assert_eq!(
            index.search("reserve a table for a party of four", 3)[0].0,
            2
        );
        assert!(index.search("zzzz", 3).is_empty());
        assert_eq!(words("get_weatherForecast.v2"), "get weather Forecast v2");
    }
}
