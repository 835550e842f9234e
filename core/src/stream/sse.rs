//! Server-sent events, decoded as bytes arrive (the WHATWG `text/event-stream` rules).
//!
//! Push-based rather than a `Stream` adapter, so the same decoder serves the HTTP clients,
//! recorded streams in tests, and bytes a Python or Node app hands over from its own SDK.
//! Lines end in `\n`, `\r\n` or `\r` (even split across chunks); `data:` lines accumulate;
//! a blank line dispatches; `:` lines are comments. An event left unterminated when the
//! stream ends is still delivered by [`SseDecoder::finish`], since recorded and proxied
//! streams often drop the final blank line.

/// One server-sent event.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field; empty for the default `message` type.
    pub event: String,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
    /// The `id:` field, when present.
    pub id: Option<String>,
}

/// Incremental decoder: [`SseDecoder::push`] bytes, receive complete events.
#[derive(Debug, Default)]
pub struct SseDecoder {
    line: Vec<u8>,
    last_was_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    id: Option<String>,
}

impl SseDecoder {
    /// A decoder at the start of a stream.
    pub fn new() -> Self {
        SseDecoder::default()
    }

    /// Feeds bytes; returns the events they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &b in bytes {
            match b {
                b'\n' if self.last_was_cr => self.last_was_cr = false,
                b'\n' | b'\r' => {
                    self.last_was_cr = b == b'\r';
                    let line = std::mem::take(&mut self.line);
                    self.line(&line, &mut out);
                }
                _ => {
                    self.last_was_cr = false;
                    self.line.push(b);
                }
            }
        }
        out
    }

    /// Ends the stream, delivering a last event that lacked its blank line.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let mut out = Vec::new();
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line(&line, &mut out);
        }
        self.line(b"", &mut out);
        out.pop()
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            if self.has_data {
                out.push(SseEvent {
                    event: std::mem::take(&mut self.event),
                    data: std::mem::take(&mut self.data),
                    id: self.id.clone(),
                });
            }
            self.event.clear();
            self.data.clear();
            self.has_data = false;
            return;
        }
        if line[0] == b':' {
            return;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&text[..], ""),
        };
        match field {
            "event" => self.event = value.to_string(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.id = Some(value.to_string()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_any_line_ending_across_chunks() {
        let text = b"event: a\r\ndata: 1\r\ndata:2\r\n\r\n: comment\n\ndata: x\r\rdata: {\"k\": 1}";
        for cut in 0..text.len() {
            let mut d = SseDecoder::new();
            let mut events = d.push(&text[..cut]);
            events.extend(d.push(&text[cut..]));
            events.extend(d.finish());
            let summary: Vec<(String, String)> =
                events.into_iter().map(|e| (e.event, e.data)).collect();
            assert_eq!(
                summary,
                vec![
                    ("a".into(), "1\n2".into()),
                    ("".into(), "x".into()),
                    ("".into(), "{\"k\": 1}".into())
                ],
                "cut at {cut}"
            );
        }
    }
}
