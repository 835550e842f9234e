//! Quick start: one batch with parallel and dependent calls, a repaired argument, a `needs`,
//! and a failing tool, printed as the envelopes a model would read.
//!
//! Run: `cargo run -p tooljig --example quickstart`

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;
use std::time::Duration;
use tooljig::{
    BatchOptions, Call, Caller, Engine, ErrorCode, HandlerError, Policy, RetryPolicy, Tool,
};

/// Arguments of `get_weather`.
#[derive(Deserialize, JsonSchema)]
struct Weather {
    /// The city to look up.
    city: String,
}

/// Arguments of `plan_outing`.
#[derive(Deserialize, JsonSchema)]
struct Outing {
    /// Where.
    city: String,
    /// The forecast, in °C.
    temperature_c: f64,
    /// When, as an ISO date.
    date: String,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let engine = Engine::new();
    engine.register(
        Tool::typed(
            "get_weather",
            "Current temperature of a city.",
            |w: Weather, _ctx| async move {
                tokio::time::sleep(Duration::from_millis(50)).await; // pretend to call an API
                let temperature_c = if w.city == "Oslo" { 4.5 } else { 21.0 };
                Ok::<_, HandlerError>(json!({"city": w.city, "temperature_c": temperature_c}))
            },
        )
        .policy(Policy::default().timeout(Duration::from_secs(5))),
    )?;
    engine.register(Tool::typed(
        "plan_outing",
        "Suggests an outing for a date.",
        |o: Outing, _ctx| async move {
            let idea = if o.temperature_c > 15.0 {
                "a picnic"
            } else {
                "a museum"
            };
            Ok::<_, HandlerError>(json!({"city": o.city, "date": o.date, "idea": idea}))
        },
    ))?;
    engine.register(
        Tool::typed(
            "book_table",
            "Books a restaurant table.",
            |_: Weather, _ctx| async move {
                Err::<(), _>(HandlerError::tool(
                    ErrorCode::ExternalApiError,
                    "the booking service is down",
                ))
            },
        )
        .policy(Policy::default().retry(RetryPolicy::attempts(2, Duration::from_millis(20)))),
    )?;

    let calls = vec![
        // Two independent lookups run in parallel; the first one's arguments need repair.
        Call::new("w1", "get_weather", "{'city': 'Lisbon',}"),
        Call::new("w2", "get_weather", r#"{"city": "Oslo"}"#),
        // Depends on w1 and takes its temperature by reference.
        Call::new(
            "p1",
            "plan_outing",
            json!({"city": "Lisbon", "date": "2026-11-28", "temperature_c": {"$from": "w1", "pointer": "/temperature_c"}}),
        ),
        // The model forgot the date: the envelope says what to ask the user.
        Call::new(
            "p2",
            "plan_outing",
            json!({"city": "Oslo", "temperature_c": {"$from": "w2", "pointer": "/temperature_c"}}),
        ),
        // A failing tool, retried once, then reported.
        Call::new("b1", "book_table", json!({"city": "Lisbon"})),
    ];
    let out = engine
        .run(
            calls,
            Caller::principal("user-1"),
            BatchOptions {
                deadline_ms: Some(15_000),
                ..Default::default()
            },
        )
        .await;
    for r in &out.results {
        let flags = format!(
            "attempts={} repaired={} ran {}..{} µs",
            r.attempts,
            r.repaired,
            r.started_us.map_or("-".into(), |s| s.to_string()),
            r.finished_us
        );
        println!(
            "{:<3} {:<12} {}  [{flags}]",
            r.call_id,
            r.tool,
            serde_json::to_string(&r.envelope)?
        );
    }
    println!("batch took {} ms", out.duration_us / 1000);
    Ok(())
}
