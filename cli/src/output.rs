//! How results are printed: a plain table for people, JSON for scripts.

use serde::Serialize;

/// Prints `value` as one line of JSON.
pub fn json(value: &impl Serialize) -> Result<(), String> {
    let text = serde_json::to_string(value).map_err(|e| format!("cannot print: {e}"))?;
    println!("{text}");
    Ok(())
}

/// Prints rows under a header, each column as wide as its widest cell.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        let padded: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        println!("{}", padded.join("  ").trim_end());
    };
    line(header.iter().map(|h| h.to_string()).collect());
    for row in rows {
        line(row.clone());
    }
}

/// A value for a table cell: strings bare, the rest as compact JSON, cut at `max` characters.
pub fn cell(value: &serde_json::Value, max: usize) -> String {
    let text = match value {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => String::new(),
        other => other.to_string(),
    };
    if text.chars().count() > max {
        let cut: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// The core's refusal as one line: its message, code and reason.
pub fn refused(e: tooljig::ToolError) -> String {
    match e.details.get("reason").and_then(serde_json::Value::as_str) {
        Some(reason) => format!("{} ({}, {reason})", e.message, e.code.as_str()),
        None => format!("{} ({})", e.message, e.code.as_str()),
    }
}
