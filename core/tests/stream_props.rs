//! Property tests of the stream parsers on hostile input, in place of `cargo fuzz` (which needs
//! a nightly toolchain this project's machines cannot fetch): arbitrary bytes, and recorded-
//! looking SSE with its events cut, reordered and corrupted, fed in arbitrary chunks, never
//! panic; a stream's events do not depend on how its bytes were chunked; a partial JSON text
//! parses to a value or to nothing, never a panic.

use proptest::prelude::*;
use tooljig::providers::Provider;
use tooljig::stream::StreamParser;
use tooljig::stream::partial_json::parse_partial;
use tooljig::stream::sse::SseDecoder;

const PROVIDERS: [Provider; 4] = [
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Gemini,
];

/// SSE-shaped text: `data:` lines of JSON-ish payloads, comments, blank lines, garbage.
fn sse_text() -> impl Strategy<Value = String> {
    let payload = prop_oneof![
        Just(r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"f","arguments":"{\"a\":"}}]}}]}"#.to_string()),
        Just(r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"x\": 1"}}"#.to_string()),
        Just(r#"{"type":"response.function_call_arguments.delta","item_id":"i","output_index":0,"delta":"{\"q\""}"#.to_string()),
        Just(r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"g","args":{"k":[1,2]}}}]}}]}"#.to_string()),
        Just("[DONE]".to_string()),
        "[ -~]{0,40}",
    ];
    prop::collection::vec(
        prop_oneof![
            payload.prop_map(|p| format!("data: {p}\n\n")),
            "[a-z]{1,8}".prop_map(|e| format!("event: {e}\n")),
            Just(": keepalive\n".to_string()),
            Just("\r\n".to_string()),
        ],
        0..24,
    )
    .prop_map(|parts| parts.concat())
}

/// Splits `bytes` at the given points (taken modulo its length).
fn chunks(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut points: Vec<usize> = cuts.iter().map(|c| c % (bytes.len() + 1)).collect();
    points.sort_unstable();
    let mut out = Vec::new();
    let mut last = 0;
    for p in points {
        out.push(bytes[last..p].to_vec());
        last = p;
    }
    out.push(bytes[last..].to_vec());
    out
}

/// Gemini sends no call ids; the ones tooljig makes up count up across streams, so they are
/// blanked before two runs are compared.
fn without_made_up_ids(text: String) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(at) = rest.find("gemini_call_") {
        let after = &rest[at + "gemini_call_".len()..];
        out.push_str(&rest[..at]);
        out.push_str("gemini_call_N");
        rest = after.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

/// Every event of a stream fed in these chunks, and how it ended, as text to compare.
fn run(provider: Provider, parts: &[Vec<u8>]) -> String {
    without_made_up_ids(events(provider, parts))
}

fn events(provider: Provider, parts: &[Vec<u8>]) -> String {
    let mut parser = StreamParser::new(provider);
    let mut seen = Vec::new();
    for part in parts {
        match parser.push(part) {
            Ok(events) => seen.extend(events.into_iter().map(|e| format!("{e:?}"))),
            Err(e) => return format!("{seen:?} error {e:?}"),
        }
    }
    match parser.finish() {
        Ok((events, turn)) => {
            seen.extend(events.into_iter().map(|e| format!("{e:?}")));
            format!("{seen:?} {turn:?}")
        }
        Err(e) => format!("{seen:?} error {e:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512), cuts in prop::collection::vec(any::<usize>(), 0..6)) {
        let parts = chunks(&bytes, &cuts);
        for provider in PROVIDERS {
            let _ = run(provider, &parts);
        }
        let mut sse = SseDecoder::new();
        for part in &parts {
            let _ = sse.push(part);
        }
        let _ = sse.finish();
        let _ = parse_partial(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn a_streams_events_do_not_depend_on_its_chunks(text in sse_text(), cuts in prop::collection::vec(any::<usize>(), 0..8)) {
        let whole = vec![text.as_bytes().to_vec()];
        let parts = chunks(text.as_bytes(), &cuts);
        for provider in PROVIDERS {
            let (a, b) = (run(provider, &whole), run(provider, &parts));
            // A malformed event fails the stream whatever the chunks; the events decoded
            // before it in the same `push` are not returned with the error, so only the error
            // is compared then.
            match (a.split_once("] error "), b.split_once("] error ")) {
                (Some((_, ea)), Some((_, eb))) => prop_assert_eq!(ea, eb),
                _ => prop_assert_eq!(a, b),
            }
        }
    }

    #[test]
    fn partial_json_of_any_prefix_never_panics(text in "[\\[\\]{}\":,0-9a-z \\\\.tfnul-]{0,80}") {
        for end in 0..=text.len() {
            let _ = parse_partial(&text[..end]);
        }
    }
}
