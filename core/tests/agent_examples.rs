//! The agent examples run to completion (each asserts its own scenario): seed 000's meeting
//! with a `needs` follow-up, seed 002's JSON-structured plan, the UI message stream.

#[path = "../../examples/rust/seed_000_schedule_meeting.rs"]
mod seed_000;
#[path = "../../examples/rust/seed_002_json_tools.rs"]
mod seed_002;
#[path = "../../examples/rust/ui_message_stream.rs"]
mod ui_stream;

#[test]
fn seed_000_schedules_after_one_question() {
    seed_000::main().unwrap();
}

#[test]
fn seed_002_runs_its_json_plan() {
    seed_002::main().unwrap();
}

#[tokio::test]
async fn ui_message_stream_example_writes_both_responses() {
    let (answer, approval) = ui_stream::streams().await.unwrap();
    assert!(answer.starts_with("data: {\"type\":\"start\",\"messageId\":\"msg_answer\"}"));
    assert!(answer.contains("\"type\":\"tool-input-error\",\"toolCallId\":\"call_f\""));
    assert!(answer.ends_with("data: [DONE]\n\n"));
    assert!(approval.contains("\"type\":\"tool-approval-request\""));
}
