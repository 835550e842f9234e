//! Each command: open what it needs from the URLs, ask the core, print.

use crate::args::{Approver, Cli, Command};
use crate::output::{cell, json, refused, table};
use serde_json::{Value, json as value};
use tooljig::audit::AuditSink;
use tooljig::{AuditQuery, Caller, Engine, EngineOptions, ErrorCode, ToolError};

/// Runs the command `cli` names.
pub async fn run(cli: Cli) -> Result<(), String> {
    let as_json = cli.json;
    match cli.command {
        Command::Pending {
            ref tenant,
            ref tool,
        } => {
            let engine = engine(&cli)?;
            let mut pending = engine.pending(tenant.as_deref()).await.map_err(refused)?;
            if let Some(tool) = tool {
                pending.retain(|r| &r.tool == tool);
            }
            if as_json {
                return json(&pending);
            }
            let rows = pending
                .iter()
                .map(|r| {
                    vec![
                        r.id.clone(),
                        r.tool.clone(),
                        cell(&serde_json::to_value(r.risk).unwrap_or_default(), 8),
                        r.requested_by.principal.clone().unwrap_or_default(),
                        r.arguments_hash.clone(),
                        cell(&r.arguments, 60),
                    ]
                })
                .collect::<Vec<_>>();
            table(
                &["ID", "TOOL", "RISK", "ASKED BY", "HASH", "ARGUMENTS"],
                &rows,
            );
            Ok(())
        }
        Command::Approve {
            ref id,
            ref hash,
            ref approver,
        } => {
            let engine = engine(&cli)?;
            let hash = bound_hash(&engine, id, hash.as_deref()).await?;
            let record = engine
                .approve(id, &hash, &caller(approver), None)
                .await
                .map_err(refused)?;
            decided(&record, as_json)
        }
        Command::Reject {
            ref id,
            ref hash,
            ref message,
            ref approver,
        } => {
            let engine = engine(&cli)?;
            let hash = bound_hash(&engine, id, hash.as_deref()).await?;
            let record = engine
                .reject(id, &hash, &caller(approver), message.clone())
                .await
                .map_err(refused)?;
            decided(&record, as_json)
        }
        Command::Edit {
            ref id,
            ref arguments,
            ref hash,
            ref approver,
        } => {
            let arguments: Value = serde_json::from_str(arguments)
                .map_err(|e| format!("--arguments is not JSON: {e}"))?;
            let engine = engine(&cli)?;
            let hash = bound_hash(&engine, id, hash.as_deref()).await?;
            let record = engine
                .edit(id, &hash, &caller(approver), arguments)
                .await
                .map_err(refused)?;
            decided(&record, as_json)
        }
        Command::Runs { limit } => {
            let engine = engine(&cli)?;
            let runs = engine.runs(limit).await.map_err(refused)?;
            if as_json {
                return json(&runs);
            }
            let rows = runs
                .iter()
                .map(|r| {
                    vec![
                        r.id.clone(),
                        cell(&serde_json::to_value(r.state).unwrap_or_default(), 16),
                        r.calls.len().to_string(),
                        r.caller.principal.clone().unwrap_or_default(),
                        r.created_at_ms.to_string(),
                    ]
                })
                .collect::<Vec<_>>();
            table(
                &["RUN", "STATE", "CALLS", "PRINCIPAL", "CREATED (ms)"],
                &rows,
            );
            Ok(())
        }
        Command::Run { ref id } => {
            let engine = engine(&cli)?;
            let Some(run) = engine.run_record(id).await.map_err(refused)? else {
                return Err(refused(
                    ToolError::new(ErrorCode::NotFound, format!("there is no run {id:?}"))
                        .with("reason", "unknown_run"),
                ));
            };
            if as_json {
                return json(&run);
            }
            let state = serde_json::to_value(run.state).unwrap_or_default();
            println!(
                "run {}  state {}  passes {}",
                run.id,
                cell(&state, 20),
                run.passes
            );
            let rows = run
                .results
                .iter()
                .map(|r| {
                    vec![
                        r.call_id.clone(),
                        r.tool.clone(),
                        cell(&serde_json::to_value(r.status).unwrap_or_default(), 18),
                        cell(&r.envelope.to_value(), 70),
                    ]
                })
                .collect::<Vec<_>>();
            table(&["CALL", "TOOL", "STATUS", "ENVELOPE"], &rows);
            for step in &run.steps {
                println!(
                    "step {}",
                    cell(&serde_json::to_value(step).unwrap_or_default(), 120)
                );
            }
            Ok(())
        }
        Command::Resume { ref id, ref ask } => {
            let engine = engine(&cli)?;
            let action = tooljig::OperatorAction::Resume;
            crate::operator::ask(&engine, action, id, None, ask, as_json).await
        }
        Command::Rollback {
            ref id,
            ref call_id,
            ref ask,
        } => {
            let engine = engine(&cli)?;
            let action = tooljig::OperatorAction::Rollback;
            crate::operator::ask(&engine, action, id, call_id.as_deref(), ask, as_json).await
        }
        Command::Serve {
            ref bind,
            ref tokens,
        } => {
            // The inbox shows the audit log too, when one is given.
            let engine = std::sync::Arc::new(engine_with_audit(&cli)?);
            let tokens = tokens
                .iter()
                .map(|t| operator_token(t))
                .collect::<Result<_, _>>()?;
            let stop = tooljig::CancellationToken::new();
            let running = crate::inbox::serve(
                crate::inbox::router(engine, crate::inbox::tokens(tokens)?, None)?,
                bind,
                stop.clone(),
            )
            .await?;
            eprintln!(
                "tooljig inbox on http://{}/ (sign in there with an operator token)",
                running.addr
            );
            let _ = tokio::signal::ctrl_c().await;
            stop.cancel();
            running.task.await.map_err(|e| e.to_string())
        }
        Command::Stats { since } => {
            let sink = audit(&cli)?;
            let query = AuditQuery {
                since_ms: since,
                ..AuditQuery::all()
            };
            let records = sink.query(query).await.map_err(|e| e.to_string())?;
            let stats = crate::stats::per_tool(&records);
            if as_json {
                return json(&stats);
            }
            let rows = stats
                .iter()
                .map(|s| {
                    vec![
                        s.tool.clone(),
                        s.calls.to_string(),
                        s.ok.to_string(),
                        s.errors.to_string(),
                        s.codes
                            .iter()
                            .map(|(code, n)| format!("{code}:{n}"))
                            .collect::<Vec<_>>()
                            .join(" "),
                        s.p50_us.to_string(),
                        s.p99_us.to_string(),
                    ]
                })
                .collect::<Vec<_>>();
            table(
                &["TOOL", "CALLS", "OK", "ERRORS", "CODES", "P50 µs", "P99 µs"],
                &rows,
            );
            Ok(())
        }
        Command::Audit {
            ref verify,
            ref principal,
            ref tool,
            ref outcome,
            since,
            until,
            limit,
        } => {
            let sink = audit(&cli)?;
            if verify.is_some() {
                let report = sink.verify().await.map_err(|e| e.to_string())?;
                if as_json {
                    json(&report)?;
                } else {
                    match &report.broken {
                        None => println!("intact: {} records", report.records),
                        Some(link) => println!("broken at record {}: {}", link.seq, link.reason),
                    }
                }
                return match &report.broken {
                    None => Ok(()),
                    Some(link) => Err(format!("the audit chain is broken at record {}", link.seq)),
                };
            }
            let outcome = match outcome {
                None => None,
                Some(o) => Some(
                    serde_json::from_value(Value::String(o.clone()))
                        .map_err(|_| format!("unknown outcome {o:?}"))?,
                ),
            };
            let query = AuditQuery {
                principal: principal.clone(),
                tool: tool.clone(),
                outcome,
                since_ms: since,
                until_ms: until,
                limit,
                ..AuditQuery::all()
            };
            let records = sink.query(query).await.map_err(|e| e.to_string())?;
            if as_json {
                for record in &records {
                    json(record)?;
                }
                return Ok(());
            }
            let rows = records
                .iter()
                .map(|r| {
                    vec![
                        r.seq.to_string(),
                        r.time_ms.to_string(),
                        r.principal.clone().unwrap_or_default(),
                        r.tool.clone(),
                        cell(&serde_json::to_value(r.outcome).unwrap_or_default(), 16),
                        r.code.map(|c| c.as_str().to_string()).unwrap_or_default(),
                    ]
                })
                .collect::<Vec<_>>();
            table(
                &["SEQ", "TIME (ms)", "PRINCIPAL", "TOOL", "OUTCOME", "CODE"],
                &rows,
            );
            Ok(())
        }
    }
}

/// The engine over the store the options name.
fn engine(cli: &Cli) -> Result<Engine, String> {
    let Some(store) = &cli.store else {
        return Err("no state store: pass --store URL or set TOOLJIG_STORE".into());
    };
    let options = value!({
        "state_store": store,
        "seal_key": cli.seal_key,
    });
    EngineOptions::from_value(options)
        .and_then(EngineOptions::build)
        .map_err(|e| e.to_string())
}

/// The engine over the store and, when given, the audit log.
fn engine_with_audit(cli: &Cli) -> Result<Engine, String> {
    let Some(store) = &cli.store else {
        return Err("no state store: pass --store URL or set TOOLJIG_STORE".into());
    };
    let options = value!({"state_store": store, "audit": cli.audit, "seal_key": cli.seal_key});
    EngineOptions::from_value(options)
        .and_then(EngineOptions::build)
        .map_err(|e| e.to_string())
}

/// The audit log the options name.
fn audit(cli: &Cli) -> Result<std::sync::Arc<dyn AuditSink>, String> {
    if cli.audit.is_none() {
        return Err("no audit log: pass --audit URL or set TOOLJIG_AUDIT".into());
    }
    let engine = EngineOptions::from_value(value!({"audit": cli.audit, "seal_key": cli.seal_key}))
        .and_then(EngineOptions::build)
        .map_err(|e| e.to_string())?;
    engine
        .audit()
        .cloned()
        .ok_or_else(|| "the audit log did not open".to_string())
}

/// The hash a decision is bound to: the one the operator saw, or the request's own. An
/// unknown request has none: the decision then goes to the core with none, and the core
/// refuses it as it refuses every unknown id (`not_found`, `unknown_approval`), so the
/// command words that refusal as the engine, the inbox and the bindings do.
async fn bound_hash(engine: &Engine, id: &str, given: Option<&str>) -> Result<String, String> {
    if let Some(hash) = given {
        return Ok(hash.to_string());
    }
    Ok(engine
        .approval(id)
        .await
        .map_err(refused)?
        .map(|record| record.arguments_hash)
        .unwrap_or_default())
}

/// `TOKEN=PRINCIPAL[:ROLE,ROLE]` as the token and the operator it stands for.
fn operator_token(spec: &str) -> Result<(String, Caller), String> {
    let (token, who) = spec
        .split_once('=')
        .filter(|(t, p)| !t.is_empty() && !p.is_empty())
        .ok_or_else(|| format!("--token {spec:?}: expected TOKEN=PRINCIPAL[:ROLE,ROLE]"))?;
    let (principal, roles) = who.split_once(':').unwrap_or((who, ""));
    let caller = Caller {
        principal: Some(principal.to_string()),
        roles: roles
            .split(',')
            .filter(|r| !r.is_empty())
            .map(String::from)
            .collect(),
        ..Caller::default()
    };
    Ok((token.to_string(), caller))
}

fn caller(approver: &Approver) -> Caller {
    Caller {
        principal: Some(approver.principal.clone()),
        tenant: approver.tenant.clone(),
        roles: approver.roles.clone(),
        ..Caller::default()
    }
}

fn decided(record: &tooljig::ApprovalRecord, as_json: bool) -> Result<(), String> {
    if as_json {
        return json(record);
    }
    let status = serde_json::to_value(record.status).unwrap_or_default();
    println!("{} {}: {}", record.id, record.tool, cell(&status, 20));
    println!("run {} continues when the app resumes it", record.run_id);
    Ok(())
}
