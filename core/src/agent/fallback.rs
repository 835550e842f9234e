//! A chain of models with a circuit breaker on each.
//!
//! A request goes to the first model whose breaker is closed; when it fails, the same request
//! goes on to the next, so one bad answer costs time, not the turn. After `threshold`
//! failures in a row a model's breaker opens and the chain skips it for `cooldown`; then it
//! gets one trial request (half-open): success closes the breaker, failure opens it again.

use super::model::{ModelClient, ModelError, ModelErrorKind, StreamSender};
use crate::handler::BoxFuture;
use crate::providers::{ModelRequest, ModelTurn};
use crate::stream::StreamEvent;
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A breaker's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BreakerState {
    /// Requests go through.
    Closed,
    /// The model is skipped until the cool-down ends.
    Open,
    /// The cool-down ended; the next request is a trial.
    HalfOpen,
}

/// One model's breaker, as [`FallbackChain::status`] reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BreakerStatus {
    /// The model's name.
    pub model: String,
    /// Its breaker.
    pub state: BreakerState,
    /// Failures in a row.
    pub consecutive_failures: u32,
    /// Requests it answered.
    pub successes: u64,
    /// Requests it failed.
    pub failures: u64,
}

#[derive(Debug, Default)]
struct Breaker {
    consecutive_failures: u32,
    open_until: Option<Instant>,
    successes: u64,
    failures: u64,
}

/// Models tried in order, each behind a circuit breaker.
pub struct FallbackChain {
    models: Vec<Arc<dyn ModelClient>>,
    breakers: Arc<Vec<Mutex<Breaker>>>,
    threshold: u32,
    cooldown: Duration,
}

impl FallbackChain {
    /// A chain over `models`, first preferred: 3 failures in a row open a breaker for 30 s.
    pub fn new(models: Vec<Arc<dyn ModelClient>>) -> Self {
        let breakers = Arc::new(models.iter().map(|_| Mutex::default()).collect());
        FallbackChain {
            models,
            breakers,
            threshold: 3,
            cooldown: Duration::from_secs(30),
        }
    }

    /// Failures in a row that open a breaker (at least 1).
    pub fn threshold(mut self, failures: u32) -> Self {
        self.threshold = failures.max(1);
        self
    }

    /// How long an open breaker skips its model.
    pub fn cooldown(mut self, cooldown: Duration) -> Self {
        self.cooldown = cooldown;
        self
    }

    /// Every model's breaker.
    pub fn status(&self) -> Vec<BreakerStatus> {
        let now = Instant::now();
        self.models
            .iter()
            .zip(self.breakers.iter())
            .map(|(m, b)| {
                let b = b.lock().unwrap_or_else(|e| e.into_inner());
                BreakerStatus {
                    model: m.name(),
                    state: state(&b, now),
                    consecutive_failures: b.consecutive_failures,
                    successes: b.successes,
                    failures: b.failures,
                }
            })
            .collect()
    }
}

fn state(b: &Breaker, now: Instant) -> BreakerState {
    match b.open_until {
        Some(t) if t > now => BreakerState::Open,
        Some(_) => BreakerState::HalfOpen,
        None => BreakerState::Closed,
    }
}

impl ModelClient for FallbackChain {
    fn name(&self) -> String {
        let names: Vec<String> = self.models.iter().map(|m| m.name()).collect();
        format!("fallback({})", names.join(" > "))
    }

    fn respond(
        &self,
        request: ModelRequest,
        events: Option<StreamSender>,
    ) -> BoxFuture<Result<ModelTurn, ModelError>> {
        let models = self.models.clone();
        let breakers = self.breakers.clone();
        let (threshold, cooldown) = (self.threshold, self.cooldown);
        Box::pin(async move {
            let mut last: Option<ModelError> = None;
            for (i, model) in models.iter().enumerate() {
                let now = Instant::now();
                {
                    let b = breakers[i].lock().unwrap_or_else(|e| e.into_inner());
                    if state(&b, now) == BreakerState::Open {
                        continue;
                    }
                }
                match model.respond(request.clone(), events.clone()).await {
                    Ok(turn) => {
                        let mut b = breakers[i].lock().unwrap_or_else(|e| e.into_inner());
                        b.consecutive_failures = 0;
                        b.open_until = None;
                        b.successes += 1;
                        return Ok(turn);
                    }
                    Err(e) => {
                        {
                            let mut b = breakers[i].lock().unwrap_or_else(|e| e.into_inner());
                            b.failures += 1;
                            b.consecutive_failures += 1;
                            let half_open = b.open_until.is_some();
                            if half_open || b.consecutive_failures >= threshold {
                                b.open_until = Some(Instant::now() + cooldown);
                            }
                        }
                        tracing::warn!(model = %model.name(), error = %e, "model failed; trying the next");
                        if let Some(tx) = &events {
                            let _ = tx.send(StreamEvent::Error {
                                message: format!("model {} failed: {}", model.name(), e.message),
                            });
                        }
                        last = Some(e);
                    }
                }
            }
            Err(last.unwrap_or_else(|| {
                ModelError::new(
                    ModelErrorKind::CircuitOpen,
                    "every model of the fallback chain is cooling down after repeated failures",
                )
            }))
        })
    }
}
