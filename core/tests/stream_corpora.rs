//! Recorded provider streams (../shared/corpora/wire) replayed through the incremental
//! parsers: every file, split at every kind of boundary, must give the same events, and the
//! turn must match an independent, non-incremental reassembly of the same stream.

mod corpora;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tooljig::providers::{FinishReason, ModelTurn, Provider};
use tooljig::stream::{StreamEvent, StreamParser, parse_stream};

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    out.sort();
    out
}

/// The data payloads of a stream, read naively (whole file, line by line).
fn data_lines(bytes: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| *d != "[DONE]")
        .map(|d| serde_json::from_str(d).expect("a data line of the corpus is JSON"))
        .collect()
}

/// Feeds the bytes in pieces of varying sizes (a fixed pseudo-random sequence).
fn parse_in_pieces(provider: Provider, bytes: &[u8], seed: u64) -> (Vec<StreamEvent>, ModelTurn) {
    let mut p = StreamParser::new(provider);
    let mut events = Vec::new();
    let mut i = 0;
    let mut x = seed;
    while i < bytes.len() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = 1 + (x >> 33) as usize % 23;
        let end = (i + n).min(bytes.len());
        events.extend(p.push(&bytes[i..end]).unwrap());
        i = end;
    }
    let (rest, turn) = p.finish().unwrap();
    events.extend(rest);
    (events, turn)
}

/// Checks the order of each call's events and that deltas add up to the final text.
fn check_event_order(events: &[StreamEvent], turn: &ModelTurn) {
    let mut text = String::new();
    let mut args: BTreeMap<String, String> = BTreeMap::new();
    let mut started = Vec::new();
    let mut ended = Vec::new();
    for e in events {
        match e {
            StreamEvent::TextDelta { delta } => text.push_str(delta),
            StreamEvent::ToolInputStart { call_id, .. } => {
                assert!(!started.contains(call_id), "started twice: {call_id}");
                started.push(call_id.clone());
            }
            StreamEvent::ToolInputDelta {
                call_id,
                delta,
                partial,
            } => {
                assert!(started.contains(call_id) && !ended.contains(call_id));
                let sofar = args.entry(call_id.clone()).or_default();
                sofar.push_str(delta);
                if let Some(p) = partial {
                    assert!(p.is_object(), "partial arguments are an object: {p}");
                }
            }
            StreamEvent::ToolInputAvailable { call_id, .. }
            | StreamEvent::ToolInputIncomplete { call_id, .. } => {
                assert!(started.contains(call_id), "ended before it started");
                assert!(!ended.contains(call_id), "ended twice");
                ended.push(call_id.clone());
            }
            _ => {}
        }
    }
    let mut visible = turn.content.clone();
    visible.push_str(turn.refusal.as_deref().unwrap_or(""));
    assert_eq!(text, visible, "text deltas add up to the turn's text");
    assert_eq!(started, ended, "every started call ends, in order");
    assert_eq!(
        started,
        turn.tool_calls
            .iter()
            .map(|c| c.id.clone())
            .collect::<Vec<_>>()
    );
    for c in &turn.tool_calls {
        assert_eq!(
            args.get(&c.id).cloned().unwrap_or_default(),
            c.arguments_text(),
            "{}",
            c.id
        );
    }
}

#[test]
fn openai_chat_streams_replay() {
    let Some(dir) = corpora::locate("wire/openai-chat-sse") else {
        return;
    };
    let all = files(&dir, "bin");
    assert!(!all.is_empty());
    let mut with_tools = 0;
    for path in all {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (events, turn) = parse_stream(Provider::OpenAiChat, &bytes).unwrap();
        for seed in [1, 7, 42] {
            let (events2, turn2) = parse_in_pieces(Provider::OpenAiChat, &bytes, seed);
            assert_eq!(events2, events, "{name}: split at other boundaries");
            assert_eq!(turn2, turn, "{name}");
        }
        check_event_order(&events, &turn);

        // Independent reassembly of choice 0.
        let mut content = String::new();
        let mut refusal = String::new();
        let mut calls: BTreeMap<u64, (String, String, String)> = BTreeMap::new();
        let mut finish = String::new();
        let mut usage = None;
        for chunk in data_lines(&bytes) {
            if let Some(u) = chunk.get("usage").filter(|u| !u.is_null()) {
                usage = Some(u.clone());
            }
            for choice in chunk["choices"].as_array().unwrap() {
                if choice["index"] != 0 {
                    continue;
                }
                let d = &choice["delta"];
                content.push_str(d["content"].as_str().unwrap_or(""));
                refusal.push_str(d["refusal"].as_str().unwrap_or(""));
                for tc in d["tool_calls"].as_array().into_iter().flatten() {
                    let e = calls.entry(tc["index"].as_u64().unwrap()).or_default();
                    if let Some(id) = tc["id"].as_str() {
                        e.0 = id.into();
                    }
                    if let Some(n) = tc["function"]["name"].as_str() {
                        e.1.push_str(n);
                    }
                    e.2.push_str(tc["function"]["arguments"].as_str().unwrap_or(""));
                }
                if let Some(f) = choice["finish_reason"].as_str() {
                    finish = f.into();
                }
            }
        }
        assert_eq!(turn.content, content, "{name}");
        assert_eq!(turn.refusal.clone().unwrap_or_default(), refusal, "{name}");
        assert_eq!(turn.raw_finish_reason, finish, "{name}");
        if let Some(u) = usage {
            assert_eq!(
                turn.usage.input_tokens,
                u["prompt_tokens"].as_u64().unwrap()
            );
            assert_eq!(
                turn.usage.output_tokens,
                u["completion_tokens"].as_u64().unwrap()
            );
        }
        let expect: Vec<(String, String, Value)> = calls
            .into_values()
            .map(|(id, n, a)| (id, n, Value::String(a)))
            .collect();
        let got: Vec<(String, String, Value)> = turn
            .tool_calls
            .iter()
            .map(|c| (c.id.clone(), c.name.clone(), c.arguments.clone()))
            .collect();
        assert_eq!(got, expect, "{name}");
        if !turn.tool_calls.is_empty() {
            with_tools += 1;
            assert_eq!(turn.finish_reason, FinishReason::ToolCalls, "{name}");
            for c in &turn.tool_calls {
                assert!(
                    !c.incomplete,
                    "{name}: a finished stream's calls are complete"
                );
                assert!(c.id.starts_with("call_"));
                let input = events
                    .iter()
                    .find_map(|e| match e {
                        StreamEvent::ToolInputAvailable { call_id, input, .. }
                            if *call_id == c.id =>
                        {
                            Some(input.clone())
                        }
                        _ => None,
                    })
                    .unwrap();
                assert_eq!(
                    input,
                    serde_json::from_str::<Value>(&c.arguments_text()).unwrap()
                );
            }
        }
        if finish == "length" {
            assert_eq!(turn.finish_reason, FinishReason::Length, "{name}");
        }
    }
    assert!(with_tools >= 1, "the corpus has tool-call streams");
}

#[test]
fn the_known_weather_call_reassembles() {
    let Some(dir) = corpora::locate("wire/openai-chat-sse") else {
        return;
    };
    let path = dir.join("2018feb66ae13fcf5333d61b95849decc68d3f63bd38172889367e1afb1e04f7.bin");
    if !path.exists() {
        eprintln!("SKIPPED: {} is not in this corpus sample", path.display());
        return;
    }
    let (_, turn) = parse_stream(Provider::OpenAiChat, &std::fs::read(path).unwrap()).unwrap();
    assert_eq!(turn.tool_calls.len(), 1);
    assert_eq!(turn.tool_calls[0].id, "call_4XzlGBLtUe9dy3GVNV4jhq7h");
    assert_eq!(turn.tool_calls[0].name, "get_weather");
    assert!(turn.tool_calls[0].arguments_object()["city"].is_string());
    assert_eq!(turn.usage.total(), 60);
}

#[test]
fn anthropic_streams_replay() {
    let Some(dir) = corpora::locate("wire/anthropic-messages-sse") else {
        return;
    };
    let all = files(&dir, "txt");
    assert!(!all.is_empty());
    for path in all {
        let bytes = std::fs::read(&path).unwrap();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        let (events, turn) = parse_stream(Provider::Anthropic, &bytes).unwrap();
        for seed in [3, 11] {
            let (events2, turn2) = parse_in_pieces(Provider::Anthropic, &bytes, seed);
            assert_eq!(events2, events, "{name}");
            assert_eq!(turn2, turn, "{name}");
        }
        check_event_order(&events, &turn);

        // Independent reassembly.
        let mut text = String::new();
        let mut blocks: BTreeMap<u64, (String, String, String, bool)> = BTreeMap::new();
        let mut stop = String::new();
        let mut stopped = false;
        for ev in data_lines(&bytes) {
            let i = ev["index"].as_u64().unwrap_or(0);
            match ev["type"].as_str().unwrap() {
                "content_block_start" if ev["content_block"]["type"] == "tool_use" => {
                    let b = &ev["content_block"];
                    blocks.insert(
                        i,
                        (
                            b["id"].as_str().unwrap().into(),
                            b["name"].as_str().unwrap().into(),
                            String::new(),
                            false,
                        ),
                    );
                }
                "content_block_start" => {
                    text.push_str(ev["content_block"]["text"].as_str().unwrap_or(""))
                }
                "content_block_delta" => match ev["delta"]["type"].as_str().unwrap() {
                    "text_delta" => text.push_str(ev["delta"]["text"].as_str().unwrap()),
                    "input_json_delta" => blocks
                        .get_mut(&i)
                        .unwrap()
                        .2
                        .push_str(ev["delta"]["partial_json"].as_str().unwrap()),
                    _ => {}
                },
                "content_block_stop" => {
                    if let Some(b) = blocks.get_mut(&i) {
                        b.3 = true;
                    }
                }
                "message_delta" => stop = ev["delta"]["stop_reason"].as_str().unwrap_or("").into(),
                "message_stop" => stopped = true,
                _ => {}
            }
        }
        assert!(stopped, "{name}: the recording ends with message_stop");
        assert_eq!(turn.content, text, "{name}");
        assert_eq!(turn.raw_finish_reason, stop, "{name}");
        let expect: Vec<(String, String, String, bool)> = blocks
            .into_values()
            .map(|(id, n, a, done)| (id, n, a, !done))
            .collect();
        let got: Vec<(String, String, String, bool)> = turn
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.id.clone(),
                    c.name.clone(),
                    c.arguments_text(),
                    c.incomplete,
                )
            })
            .collect();
        assert_eq!(got, expect, "{name}");
        // Incomplete calls are reported, and refused instead of run.
        let incomplete: Vec<&str> = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ToolInputIncomplete { call_id, .. } => Some(call_id.as_str()),
                _ => None,
            })
            .collect();
        let flagged: Vec<&str> = turn
            .tool_calls
            .iter()
            .filter(|c| c.incomplete)
            .map(|c| c.id.as_str())
            .collect();
        assert_eq!(incomplete, flagged, "{name}");
        let (run, refused) = turn.into_batch();
        assert_eq!(run.len() + refused.len(), turn.tool_calls.len());
        assert!(
            refused
                .iter()
                .all(|r| r.envelope.code() == Some(tooljig::ErrorCode::IncompleteArguments))
        );
        match stop.as_str() {
            "refusal" => assert_eq!(turn.finish_reason, FinishReason::Refusal),
            "max_tokens" => assert_eq!(turn.finish_reason, FinishReason::Length),
            "tool_use" => assert_eq!(turn.finish_reason, FinishReason::ToolCalls),
            "end_turn" => assert_eq!(turn.finish_reason, FinishReason::Stop),
            _ => {}
        }
    }
}

#[test]
fn the_cut_off_anthropic_call_is_incomplete_with_its_partial_arguments() {
    let Some(dir) = corpora::locate("wire/anthropic-messages-sse") else {
        return;
    };
    let path = dir.join("incomplete_partial_json_response.txt");
    if !path.exists() {
        eprintln!("SKIPPED: {} is not in this corpus sample", path.display());
        return;
    }
    let (events, turn) = parse_stream(Provider::Anthropic, &std::fs::read(path).unwrap()).unwrap();
    assert_eq!(turn.finish_reason, FinishReason::Length);
    let call = &turn.tool_calls[0];
    assert_eq!(call.name, "make_file");
    assert!(call.incomplete);
    let (partial, reason) = events
        .iter()
        .find_map(|e| match e {
            StreamEvent::ToolInputIncomplete {
                partial, reason, ..
            } => Some((partial.clone(), reason.clone())),
            _ => None,
        })
        .expect("the cut-off call is reported");
    assert!(reason.contains("max_tokens"), "{reason}");
    assert_eq!(
        partial.unwrap(),
        json!({"filename": "taxes.txt", "lines_of_text": [
            "# COMPREHENSIVE TAX GUIDE FOR INDIVIDUALS WITH MULTIPLE W-2s", "", "## INTRODUCTION", "", "Filing taxes"
        ]})
    );
    assert!(
        !events
            .iter()
            .any(|e| matches!(e, StreamEvent::ToolInputAvailable { .. }))
    );
}

#[test]
fn anthropic_tool_use_stream_has_the_weather_call() {
    let Some(dir) = corpora::locate("wire/anthropic-messages-sse") else {
        return;
    };
    let path = dir.join("tool_use_response.txt");
    if !path.exists() {
        eprintln!("SKIPPED: {} is not in this corpus sample", path.display());
        return;
    }
    let (events, turn) = parse_stream(Provider::Anthropic, &std::fs::read(path).unwrap()).unwrap();
    assert_eq!(
        turn.content,
        "I'll check the current weather in Paris for you."
    );
    assert_eq!(turn.tool_calls[0].id, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
    assert_eq!(
        turn.tool_calls[0].arguments_object(),
        json!({"location": "Paris"})
    );
    assert_eq!(turn.usage.input_tokens, 377);
    assert_eq!(turn.usage.output_tokens, 65);
    let partials: Vec<Value> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolInputDelta { partial, .. } => partial.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(
        partials,
        vec![
            json!({}),
            json!({"location": "P"}),
            json!({"location": "Par"}),
            json!({"location": "Paris"})
        ]
    );
}
