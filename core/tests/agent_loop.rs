//! The agent loop with scripted models: multi-round, parallel calls, needs then answer,
//! limits with a final answer, planner and responder, modes, fallback, suspend and resume.

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tooljig::agent::*;
use tooljig::providers::{FinishReason, Message, ModelTurn, ToolCall, ToolChoice, Usage};
use tooljig::stream::StreamEvent;
use tooljig::*;

fn engine() -> Arc<Engine> {
    let e = Engine::new();
    e.register(Tool::from_fn(
        "get_weather",
        "Weather for a city.",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |a: Value, _| async move {
            tokio::time::sleep(Duration::from_millis(30)).await;
            Ok(json!({"city": a["city"], "temp_c": 21}))
        },
    ))
    .unwrap();
    e.register(Tool::from_fn(
        "schedule_meeting",
        "Schedules a meeting.",
        json!({"type": "object", "properties": {"counterpart": {"type": "string"}, "durationMins": {"type": "integer"}}, "required": ["counterpart", "durationMins"]}),
        |a: Value, _| async move { Ok(json!({"sessionId": "s1", "with": a["counterpart"], "mins": a["durationMins"]})) },
    ))
    .unwrap();
    Arc::new(e)
}

fn call(id: &str, name: &str, args: Value) -> ToolCall {
    ToolCall::new(id, name, args.to_string())
}

async fn collect(
    f: impl std::future::Future<Output = RunOutcome>,
    mut rx: tokio::sync::mpsc::UnboundedReceiver<StreamEvent>,
) -> (RunOutcome, Vec<StreamEvent>) {
    let out = f.await;
    let mut events = Vec::new();
    while let Ok(e) = rx.try_recv() {
        events.push(e);
    }
    (out, events)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn multi_round_with_parallel_calls_until_a_text_answer() {
    let model = ScriptedModel::new(
        "m",
        [
            ModelTurn::calls(vec![
                call("c1", "get_weather", json!({"city": "Paris"})),
                call("c2", "get_weather", json!({"city": "Rome"})),
            ]),
            ModelTurn::calls(vec![call(
                "c3",
                "schedule_meeting",
                json!({"counterpart": "Aviad", "durationMins": 30}),
            )]),
            ModelTurn::text("Paris and Rome are 21°C; the meeting is set."),
        ],
    )
    .shared();
    let agent = Agent::new(engine(), model.clone());
    let mut state = AgentState::new("Weather in Paris and Rome, then book Aviad for 30 min");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (out, events) = collect(agent.run(&mut state, &Caller::default(), Some(tx)), rx).await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::Answered
        }
    );
    assert_eq!(out.answer, "Paris and Rome are 21°C; the meeting is set.");
    assert_eq!(out.counters.steps, 3);
    assert_eq!(out.counters.model_calls, 3);
    assert_eq!(out.counters.tool_calls, 3);
    assert_eq!(out.counters.tool_successes, 3);
    // The second request carried both results, in call order.
    let reqs = model.requests();
    let Message::Tool { results } = reqs[1].messages.last().unwrap() else {
        panic!("the results follow the calls")
    };
    assert_eq!(
        results
            .iter()
            .map(|r| r.call_id.as_str())
            .collect::<Vec<_>>(),
        ["c1", "c2"]
    );
    assert_eq!(reqs[0].tools.len(), 2);
    // Parallel: both weather calls finished before either could have run twice as long.
    assert!(out.counters.tools_ms < 200, "{}", out.counters.tools_ms);
    let outputs: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            StreamEvent::ToolOutputAvailable { call_id, .. } => Some(call_id.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(outputs.len(), 3);
    assert_eq!(
        events
            .iter()
            .filter(|e| matches!(e, StreamEvent::StepStart { .. }))
            .count(),
        3
    );
    assert!(matches!(
        events.last(),
        Some(StreamEvent::Finish {
            finish_reason: FinishReason::Stop
        })
    ));
    // The conversation serializes and reads back.
    assert_eq!(AgentState::from_json(&state.to_json()).unwrap(), state);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn needs_becomes_one_question_and_the_answer_continues_the_call() {
    let planner = ScriptedModel::new(
        "planner",
        [
            ModelTurn::calls(vec![call(
                "c1",
                "schedule_meeting",
                json!({"counterpart": "Aviad"}),
            )]),
            ModelTurn::calls(vec![call(
                "c2",
                "schedule_meeting",
                json!({"counterpart": "Aviad", "durationMins": 30}),
            )]),
        ],
    )
    .shared();
    let responder = ScriptedModel::new(
        "responder",
        [
            ModelTurn::text("How long should the meeting with Aviad be?"),
            ModelTurn::text("Done: a 30-minute meeting with Aviad is proposed."),
        ],
    )
    .shared();
    let agent = Agent::new(engine(), planner.clone()).responder(responder.clone());
    let mut state = AgentState::new("Set a meeting with Aviad tomorrow");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(out.answer, "How long should the meeting with Aviad be?");
    let RunStatus::NeedsInput { needs } = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(needs[0].fields, vec!["durationMins"]);
    assert_eq!(out.counters.needs_loops, 1);
    // The question was asked without tools, naming the missing field.
    let q = &responder.requests()[0];
    assert_eq!(q.tool_choice, ToolChoice::None);
    let Message::System { content } = q.messages.last().unwrap() else {
        panic!()
    };
    assert!(content.contains("durationMins"), "{content}");
    // Stored and resumed later, the answer goes on with the call made.
    let mut state = AgentState::from_json(&state.to_json()).unwrap();
    let out = agent
        .send(&mut state, "30 minutes", &Caller::default(), None)
        .await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::Answered
        }
    );
    assert_eq!(
        out.answer,
        "Done: a 30-minute meeting with Aviad is proposed."
    );
    assert_eq!(out.counters.tool_successes, 1);
    assert_eq!(out.counters.failures_by_code.get("needs"), Some(&1));
    assert_eq!(planner.remaining(), 0);
}

/// A model that calls a tool whenever it may, and answers when told not to.
fn looping_model(calls: Arc<AtomicUsize>) -> Arc<dyn ModelClient> {
    model_fn("looper", move |req, _| {
        let calls = calls.clone();
        async move {
            if req.tool_choice == ToolChoice::None {
                return Ok(ModelTurn::text(
                    "I checked the weather three times; it is 21°C.",
                ));
            }
            let n = calls.fetch_add(1, Ordering::SeqCst);
            let mut t = ModelTurn::calls(vec![call(
                &format!("w{n}"),
                "get_weather",
                json!({"city": "Paris"}),
            )]);
            t.usage = Usage {
                input_tokens: 40,
                output_tokens: 10,
            };
            Ok(t)
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_loops_ends_at_the_step_limit_with_a_final_answer() {
    let n = Arc::new(AtomicUsize::new(0));
    let agent = Agent::new(engine(), looping_model(n.clone())).options(AgentOptions {
        limits: AgentLimits {
            max_steps: 3,
            ..Default::default()
        },
        ..Default::default()
    });
    let mut state = AgentState::new("weather?");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::StepLimit
        }
    );
    assert_eq!(out.answer, "I checked the weather three times; it is 21°C.");
    assert_eq!(n.load(Ordering::SeqCst), 3);
    assert_eq!(out.counters.steps, 3);
    assert_eq!(out.counters.tool_calls, 3);
    assert_eq!(
        out.counters.model_calls, 4,
        "three steps and the final answer"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn token_budget_and_deadline_end_with_a_summary_of_what_was_done() {
    let agent = Agent::new(engine(), looping_model(Arc::default())).options(AgentOptions {
        limits: AgentLimits {
            token_budget: Some(120),
            ..Default::default()
        },
        ..Default::default()
    });
    let mut state = AgentState::new("weather?");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::TokenBudget
        }
    );
    assert_eq!(out.counters.usage.total(), 150);
    assert!(out.answer.contains("token budget"), "{}", out.answer);
    assert!(
        out.answer.contains("get_weather succeeded"),
        "{}",
        out.answer
    );

    let agent = Agent::new(engine(), looping_model(Arc::default())).options(AgentOptions {
        limits: AgentLimits {
            deadline_ms: Some(80),
            ..Default::default()
        },
        ..Default::default()
    });
    let mut state = AgentState::new("weather?");
    let started = std::time::Instant::now();
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::Deadline
        }
    );
    assert!(started.elapsed() < Duration::from_millis(500));
    assert!(out.answer.contains("time allowed"), "{}", out.answer);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_calls_are_capped_per_step_and_per_run() {
    let five = (0..5)
        .map(|i| {
            call(
                &format!("a{i}"),
                "get_weather",
                json!({"city": format!("C{i}")}),
            )
        })
        .collect();
    let model = ScriptedModel::new(
        "m",
        [
            ModelTurn::calls(five),
            ModelTurn::calls(vec![
                call("b0", "get_weather", json!({"city": "X"})),
                call("b1", "get_weather", json!({"city": "Y"})),
            ]),
            ModelTurn::text("Enough."),
        ],
    )
    .shared();
    let agent = Agent::new(engine(), model.clone()).options(AgentOptions {
        limits: AgentLimits {
            max_tool_calls_per_step: 2,
            max_tool_calls_per_run: 3,
            ..Default::default()
        },
        ..Default::default()
    });
    let mut state = AgentState::new("many cities");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(
        out.counters.failures_by_code.get("too_many_calls"),
        Some(&4)
    );
    assert_eq!(
        out.counters.tool_successes, 3,
        "2 in step one, 1 left for step two"
    );
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::ToolCallLimit
        }
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn act_first_holds_planner_text_and_talk_first_streams_it() {
    for (mode, shown, streaming) in [
        (Mode::ActFirst, false, true),
        (Mode::TalkFirst, true, true),
        (Mode::ActFirst, false, false),
        (Mode::TalkFirst, true, false),
    ] {
        let mut t = ModelTurn::calls(vec![call("c1", "get_weather", json!({"city": "Oslo"}))]);
        t.content = "Let me look that up. ".into();
        let model = ScriptedModel::new("m", [t, ModelTurn::text("It is 21°C in Oslo.")]);
        let model = if streaming { model.streaming() } else { model }.shared();
        let agent = Agent::new(engine(), model).options(AgentOptions {
            mode,
            ..Default::default()
        });
        let mut state = AgentState::new("weather in Oslo");
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (out, events) = collect(agent.run(&mut state, &Caller::default(), Some(tx)), rx).await;
        let text: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::TextDelta { delta } => Some(delta.as_str()),
                _ => None,
            })
            .collect();
        let want = if shown {
            "Let me look that up. It is 21°C in Oslo."
        } else {
            "It is 21°C in Oslo."
        };
        assert_eq!(text, want, "{mode:?} streaming={streaming}");
        assert_eq!(out.answer, "It is 21°C in Oslo.");
        // The held text is still in the conversation.
        assert!(
            matches!(&state.messages[1], Message::Assistant { content, .. } if content == "Let me look that up. ")
        );
        // Tool progress streams in both modes.
        assert!(
            events
                .iter()
                .any(|e| matches!(e, StreamEvent::ToolInputAvailable { .. }))
        );
        if streaming {
            assert!(
                events
                    .iter()
                    .any(|e| matches!(e, StreamEvent::ToolInputDelta { .. }))
            );
        }
    }
    assert_eq!(mode::choose_mode("book a table", &[]), Mode::ActFirst);
    assert_eq!(mode::choose_mode("hello there", &[]), Mode::TalkFirst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_distinct_responder_answers_when_the_planner_calls_no_tool() {
    let planner = ScriptedModel::new("small", [ModelTurn::text("(no tools)")]).shared();
    let responder =
        ScriptedModel::new("large", [ModelTurn::text("Hello! How can I help?")]).shared();
    let agent = Agent::new(engine(), planner.clone()).responder(responder.clone());
    let mut state = AgentState::new("hi");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(out.answer, "Hello! How can I help?");
    assert_eq!(planner.requests()[0].tool_choice, ToolChoice::Auto);
    assert_eq!(responder.requests()[0].tool_choice, ToolChoice::None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback_chain_moves_on_and_comes_back_after_the_cool_down() {
    let a_calls = Arc::new(AtomicUsize::new(0));
    let a_ok = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (ac, ao) = (a_calls.clone(), a_ok.clone());
    let a = model_fn("a", move |_, _| {
        let (ac, ao) = (ac.clone(), ao.clone());
        async move {
            ac.fetch_add(1, Ordering::SeqCst);
            if ao.load(Ordering::SeqCst) {
                Ok(ModelTurn::text("from a"))
            } else {
                Err(ModelError::from_status(503, "overloaded"))
            }
        }
    });
    let b = model_fn("b", |_, _| async { Ok(ModelTurn::text("from b")) });
    let chain = Arc::new(
        FallbackChain::new(vec![a, b])
            .threshold(2)
            .cooldown(Duration::from_millis(100)),
    );
    let agent = Agent::new(engine(), chain.clone());
    let mut answers = Vec::new();
    for _ in 0..4 {
        let mut s = AgentState::new("hi");
        answers.push(agent.run(&mut s, &Caller::default(), None).await.answer);
    }
    assert_eq!(answers, ["from b"; 4]);
    assert_eq!(
        a_calls.load(Ordering::SeqCst),
        2,
        "a was skipped once its breaker opened"
    );
    let st = chain.status();
    assert_eq!(st[0].state, BreakerState::Open);
    a_ok.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(120)).await;
    assert_eq!(chain.status()[0].state, BreakerState::HalfOpen);
    let mut s = AgentState::new("hi");
    assert_eq!(
        agent.run(&mut s, &Caller::default(), None).await.answer,
        "from a"
    );
    assert_eq!(chain.status()[0].state, BreakerState::Closed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_model_fails_the_run_still_answers() {
    let dead = model_fn("dead", |_, _| async {
        Err(ModelError::from_status(500, "down"))
    });
    let agent = Agent::new(engine(), dead);
    let mut state = AgentState::new("hi");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert_eq!(
        out.status,
        RunStatus::Finished {
            reason: StopReason::ModelFailed
        }
    );
    assert!(
        out.answer.contains("could not be reached"),
        "{}",
        out.answer
    );
    assert_eq!(out.counters.model_failures, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_side_tool_suspends_the_run_which_resumes_from_storage() {
    let e = engine();
    e.register(Tool::external(ToolSpec::new(
        "get_location",
        "The browser's location.",
        json!({"type": "object", "properties": {}}),
    )))
    .unwrap();
    let model = ScriptedModel::new(
        "m",
        [
            ModelTurn::calls(vec![
                call("loc", "get_location", json!({})),
                call("w", "get_weather", json!({"city": "Paris"})),
            ]),
            ModelTurn::text("You are in Lyon; Paris is 21°C."),
        ],
    )
    .shared();
    let agent = Agent::new(e.clone(), model.clone());
    let mut state = AgentState::new("where am I, and the weather in Paris?");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (out, events) = collect(agent.run(&mut state, &Caller::default(), Some(tx)), rx).await;
    let RunStatus::Suspended { pending, .. } = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(pending[0].call_id, "loc");
    assert_eq!(pending[0].status, CallStatus::PendingExternal);
    assert!(
        events.iter().any(
            |e| matches!(e, StreamEvent::ToolOutputPending { call_id, .. } if call_id == "loc")
        )
    );
    let stored = state.to_json();
    let batch_run = state
        .suspended
        .as_ref()
        .unwrap()
        .batch_run_id
        .clone()
        .expect("persisted");
    // The client runs its tool and submits the result; later, another process resumes.
    e.submit_result(
        &batch_run,
        "loc",
        &Caller::default(),
        Ok(json!({"city": "Lyon"})),
    )
    .await
    .unwrap();
    let mut state = AgentState::from_json(&stored).unwrap();
    let out = agent
        .resume(&mut state, &Caller::default(), None)
        .await
        .unwrap();
    assert_eq!(out.answer, "You are in Lyon; Paris is 21°C.");
    let Message::Tool { results } = model.requests()[1].messages.last().unwrap().clone() else {
        panic!()
    };
    assert_eq!(
        results[0].envelope.to_value(),
        json!({"ok": true, "data": {"city": "Lyon"}})
    );
    assert_eq!(results[1].call_id, "w");
    assert_eq!(out.counters.tool_successes, 2);
    // Resuming a finished run is refused, not repeated.
    assert!(
        agent
            .resume(&mut state, &Caller::default(), None)
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_call_ids_across_turns_are_renamed() {
    let model = ScriptedModel::new(
        "m",
        [
            ModelTurn::calls(vec![call("x", "get_weather", json!({"city": "A"}))]),
            ModelTurn::calls(vec![call("x", "get_weather", json!({"city": "B"}))]),
            ModelTurn::text("done"),
        ],
    )
    .shared();
    let agent = Agent::new(engine(), model.clone());
    let mut state = AgentState::new("two");
    agent.run(&mut state, &Caller::default(), None).await;
    let last = model.requests()[2].messages.clone();
    let Message::Tool { results } = last.last().unwrap() else {
        panic!()
    };
    assert_ne!(results[0].call_id, "x");
    let Message::Assistant { tool_calls, .. } = &last[last.len() - 2] else {
        panic!()
    };
    assert_eq!(tool_calls[0].id, results[0].call_id);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_suspends_the_run_and_the_decision_resumes_it() {
    let e = engine();
    let sent = Arc::new(AtomicUsize::new(0));
    let s = sent.clone();
    e.register(
        Tool::from_fn(
            "send_email",
            "Sends an email.",
            json!({"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]}),
            move |a: Value, _| {
                s.fetch_add(1, Ordering::SeqCst);
                async move { Ok(json!({"sent_to": a["to"]})) }
            },
        )
        .policy(Policy::default().require_approval()),
    )
    .unwrap();
    let model = ScriptedModel::new(
        "m",
        [
            ModelTurn::calls(vec![call(
                "e1",
                "send_email",
                json!({"to": "ana@example.com"}),
            )]),
            ModelTurn::text("Sent to Ana."),
        ],
    )
    .shared();
    let agent = Agent::new(e.clone(), model);
    let user = Caller::principal("u1");
    let mut state = AgentState::new("email Ana");
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let (out, events) = collect(agent.run(&mut state, &user, Some(tx)), rx).await;
    let RunStatus::Suspended { pending, .. } = &out.status else {
        panic!("{:?}", out.status)
    };
    assert_eq!(pending[0].status, CallStatus::PendingApproval);
    assert_eq!(
        sent.load(Ordering::SeqCst),
        0,
        "nothing runs before the decision"
    );
    let approval_id = pending[0].approval_id.clone().unwrap();
    assert!(events.iter().any(|ev| matches!(ev,
        StreamEvent::ToolApprovalRequest { approval_id: a, .. } if *a == approval_id)));
    // Still pending: resuming keeps it suspended.
    let mut state = AgentState::from_json(&state.to_json()).unwrap();
    let again = agent.resume(&mut state, &user, None).await.unwrap();
    assert!(matches!(again.status, RunStatus::Suspended { .. }));
    e.decide(
        &approval_id,
        Decision::Approve {
            arguments_hash: pending[0].arguments_hash.clone().unwrap(),
            remember: None,
        },
        &user,
    )
    .await
    .unwrap();
    let out = agent.resume(&mut state, &user, None).await.unwrap();
    assert_eq!(out.answer, "Sent to Ana.");
    assert_eq!(sent.load(Ordering::SeqCst), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_message_on_a_suspended_run_cancels_what_waits() {
    let e = engine();
    e.register(Tool::external(ToolSpec::new(
        "get_location",
        "The browser's location.",
        json!({"type": "object", "properties": {}}),
    )))
    .unwrap();
    let model = ScriptedModel::new(
        "m",
        [
            ModelTurn::calls(vec![call("loc", "get_location", json!({}))]),
            ModelTurn::text("Sure, Paris then."),
        ],
    )
    .shared();
    let agent = Agent::new(e, model.clone());
    let mut state = AgentState::new("where am I?");
    let out = agent.run(&mut state, &Caller::default(), None).await;
    assert!(matches!(out.status, RunStatus::Suspended { .. }));
    let out = agent
        .send(
            &mut state,
            "never mind, use Paris",
            &Caller::default(),
            None,
        )
        .await;
    assert_eq!(out.answer, "Sure, Paris then.");
    let msgs = &model.requests()[1].messages;
    let Message::Tool { results } = &msgs[msgs.len() - 2] else {
        panic!("{msgs:?}")
    };
    assert_eq!(results[0].envelope.code(), Some(ErrorCode::Cancelled));
    assert!(
        matches!(msgs.last(), Some(Message::User { content }) if content == "never mind, use Paris")
    );
}
