//! What the command line's tests share: an app whose one tool moves money under approval and
//! whose compensation reverses it, counting both, with one transfer already waiting.

#![allow(dead_code)] // each test file uses what it needs

use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use tooljig::*;

/// The app, what its handler and compensation did, and the run of its waiting transfer.
pub struct TransferApp {
    pub engine: Arc<Engine>,
    /// How many times the transfer ran.
    pub sent: Arc<AtomicUsize>,
    /// The results the compensation reversed.
    pub undone: Arc<Mutex<Vec<Value>>>,
    /// The run whose transfer of 40, asked by ada, waits for approval.
    pub run_id: String,
}

/// The app on the state store `store`, with ada's transfer of 40 waiting for approval.
pub async fn transfer_app(store: &str) -> TransferApp {
    let engine = Arc::new(
        EngineOptions::from_value(json!({"state_store": store}))
            .and_then(EngineOptions::build)
            .unwrap(),
    );
    let sent = Arc::new(AtomicUsize::new(0));
    let undone = Arc::new(Mutex::new(Vec::<Value>::new()));
    let s = sent.clone();
    engine
        .register(
            Tool::from_fn(
                "transfer",
                "Moves money.",
                json!({"type": "object"}),
                move |a: Value, _| {
                    let s = s.clone();
                    async move {
                        s.fetch_add(1, Ordering::SeqCst);
                        Ok(json!({"transfer": format!("t-{}", a["amount"])}))
                    }
                },
            )
            .policy(Policy::default().require_approval()),
        )
        .unwrap();
    let u = undone.clone();
    engine.compensate_with(
        "transfer",
        handler_fn(move |a: Value, _| {
            let u = u.clone();
            async move {
                u.lock().unwrap().push(a["result"].clone());
                Ok(json!({"reversed": true}))
            }
        }),
    );
    let out = engine
        .run(
            vec![Call::new("t", "transfer", json!({"amount": 40}))],
            Caller::principal("ada"),
            BatchOptions::default(),
        )
        .await;
    let run_id = out.run_id.clone().unwrap();
    TransferApp {
        engine,
        sent,
        undone,
        run_id,
    }
}

/// Approves the app's waiting transfer, as ada.
pub async fn approve(app: &TransferApp) {
    let pending = app.engine.pending_approvals(None).await.unwrap();
    let p = &pending[0];
    app.engine
        .approve(&p.id, &p.arguments_hash, &Caller::principal("ada"), None)
        .await
        .unwrap();
}
