//! The agent examples run to completion (each asserts its own scenario): the meeting
//! with a `needs` follow-up, the JSON-structured plan, the UI message stream.

#[path = "../../examples/rust/json_structured_tools.rs"]
mod json_structured_tools;
#[path = "../../examples/rust/schedule_meeting.rs"]
mod schedule_meeting;
#[path = "../../examples/rust/ui_message_stream.rs"]
mod ui_stream;

#[test]
fn a_meeting_is_scheduled_after_one_question() {
    schedule_meeting::main().unwrap();
}

#[test]
fn a_json_structured_plan_runs() {
    json_structured_tools::main().unwrap();
}

#[tokio::test]
async fn ui_message_stream_example_writes_both_responses() {
    let (answer, approval) = ui_stream::streams().await.unwrap();
    assert!(answer.starts_with("data: {\"type\":\"start\",\"messageId\":\"msg_answer\"}"));
    assert!(answer.contains("\"type\":\"tool-input-error\",\"toolCallId\":\"call_f\""));
    assert!(answer.ends_with("data: [DONE]\n\n"));
    assert!(approval.contains("\"type\":\"tool-approval-request\""));
}
