//! A provider's event stream, in any bytes and cut anywhere: the decoders never panic, and
//! how the bytes are split into chunks never changes what they decode to. An error ends the
//! stream and drops the events of the chunk that failed, so when a stream fails, smaller
//! chunks may have delivered more of the events before the error, never other ones.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tooljig::providers::Provider;
use tooljig::stream::StreamParser;

const PROVIDERS: [Provider; 4] = [
    Provider::OpenAiChat,
    Provider::OpenAiResponses,
    Provider::Anthropic,
    Provider::Gemini,
];

fuzz_target!(|input: (u8, u8, &[u8])| {
    let (which, cut, bytes) = input;
    let provider = PROVIDERS[usize::from(which) % PROVIDERS.len()];
    let (whole, whole_error) = decode(provider, &[bytes]);
    // Split at every `cut`-th byte (1 to 256): one event may span several chunks.
    let step = usize::from(cut) + 1;
    let chunks: Vec<&[u8]> = bytes.chunks(step).collect();
    let (chunked, chunked_error) = decode(provider, &chunks);
    assert_eq!(
        whole_error, chunked_error,
        "chunks of {step} bytes fail differently"
    );
    if whole_error.is_none() {
        assert_eq!(whole, chunked, "chunks of {step} bytes decode differently");
    } else {
        assert!(
            chunked.starts_with(&whole),
            "chunks of {step} bytes decode other events"
        );
    }
});

/// The events (the final turn last) and the error the parser gives for `chunks`, as text
/// to compare.
fn decode(provider: Provider, chunks: &[&[u8]]) -> (Vec<String>, Option<String>) {
    let mut parser = StreamParser::new(provider);
    let mut events = Vec::new();
    for chunk in chunks {
        match parser.push(chunk) {
            Ok(more) => events.extend(more.iter().map(|e| format!("{e:?}"))),
            Err(e) => return (events, Some(format!("{e:?}"))),
        }
    }
    match parser.finish() {
        Ok((more, turn)) => {
            events.extend(more.iter().map(|e| format!("{e:?}")));
            events.push(format!("{turn:?}"));
            (events, None)
        }
        Err(e) => (events, Some(format!("at finish: {e:?}"))),
    }
}
