// Parses tooljig's UI message stream output with the real `ai` package: the same transport
// and message reducer `useChat` uses (DefaultChatTransport → parseJsonEventStream with
// uiMessageChunkSchema → readUIMessageStream). The streams come from the Rust example
// `ui_message_stream`, written by run-tests.sh into $UI_STREAM_OUT (default ./out).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DefaultChatTransport, readUIMessageStream, uiMessageChunkSchema } from 'ai';

const OUT = process.env.UI_STREAM_OUT ?? new URL('../out', import.meta.url).pathname;

function load(name) {
  const path = join(OUT, name);
  assert.ok(existsSync(path), `${path} is missing: run tests/ui-stream/run-tests.sh`);
  return readFileSync(path);
}

// The body as a stream of small, uneven chunks, as a network delivers it.
function body(bytes, seed) {
  let x = seed;
  let i = 0;
  return new ReadableStream({
    pull(controller) {
      if (i >= bytes.length) return controller.close();
      x = (x * 1103515245 + 12345) % 2147483648;
      const n = 1 + (x % 37);
      controller.enqueue(bytes.subarray(i, i + n));
      i += n;
    },
  });
}

async function parse(name, seed = 7) {
  const bytes = load(name);
  const headers = JSON.parse(load('headers.json').toString());
  const transport = new DefaultChatTransport({
    api: 'http://tooljig.test/api/chat',
    fetch: async () => new Response(body(bytes, seed), { status: 200, headers }),
  });
  const stream = await transport.sendMessages({
    chatId: 'chat-1',
    messages: [],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  const [forChunks, forMessage] = stream.tee();
  const chunks = [];
  for await (const c of forChunks) chunks.push(c);
  const errors = [];
  const messages = [];
  for await (const m of readUIMessageStream({ stream: forMessage, onError: (e) => errors.push(e), terminateOnError: true })) {
    messages.push(structuredClone(m));
  }
  assert.deepEqual(errors, []);
  return { chunks, message: messages.at(-1), messages, headers };
}

const tool = (message, name) => message.parts.find((p) => p.type === `tool-${name}`);

test('every chunk is valid for the AI SDK schema and the headers mark a UI message stream', async () => {
  const { chunks, headers } = await parse('answer.sse');
  assert.equal(headers['x-vercel-ai-ui-message-stream'], 'v1');
  assert.equal(headers['content-type'], 'text/event-stream');
  const schema = await uiMessageChunkSchema().validate;
  for (const c of chunks) {
    const r = await schema(c);
    assert.ok(r.success, `chunk rejected: ${JSON.stringify(c)}`);
  }
  assert.equal(chunks[0].type, 'start');
  assert.equal(chunks.at(-1).type, 'finish');
  assert.equal(chunks.at(-1).finishReason, 'stop');
});

test('a run renders as steps, text and tool parts in their final states', async () => {
  const { message } = await parse('answer.sse');
  assert.equal(message.id, 'msg_answer');
  assert.equal(message.role, 'assistant');
  const types = message.parts.map((p) => p.type);
  assert.deepEqual(types, [
    'step-start', 'text', 'tool-get_weather', 'tool-book_table', 'tool-make_file',
    'step-start', 'text',
  ]);
  assert.equal(message.parts[1].text, 'Let me check. ');
  assert.equal(message.parts[1].state, 'done');
  const weather = tool(message, 'get_weather');
  assert.equal(weather.state, 'output-available');
  assert.equal(weather.toolCallId, 'call_w');
  assert.deepEqual(weather.input, { city: 'Paris' });
  assert.deepEqual(weather.output, { ok: true, data: { city: 'Paris', temp_c: 21 } });
  const booking = tool(message, 'book_table');
  assert.equal(booking.state, 'output-error');
  assert.match(booking.errorText, /^external_api_error: the booking service is down/);
  // The call cut off mid-arguments: an error part with what arrived, never an output.
  const file = tool(message, 'make_file');
  assert.equal(file.state, 'output-error');
  assert.match(file.errorText, /^incomplete_arguments/);
  assert.match(message.parts.at(-1).text, /^Paris is 21°C\. The booking service is down/);
});

test('progress and a preliminary output show while a tool runs; the final output replaces them', async () => {
  const { chunks, messages, message } = await parse('answer.sse');
  const progress = chunks.find((c) => c.type === 'data-tooljig-progress');
  assert.deepEqual(progress.data, { toolCallId: 'call_w', fraction: 0.5, message: 'asking the weather service' });
  const early = messages.map((m) => tool(m, 'get_weather')).find((p) => p?.preliminary === true);
  assert.ok(early, 'a message showed the preliminary output');
  assert.equal(early.state, 'output-available');
  assert.deepEqual(early.output, { city: 'Paris', status: 'loading' });
  const final = tool(message, 'get_weather');
  assert.notEqual(final.preliminary, true);
  assert.deepEqual(final.output, { ok: true, data: { city: 'Paris', temp_c: 21 } });
});

test('a model failure the run survived is data for onData, not a failed request', async () => {
  const { chunks, message } = await parse('answer.sse');
  const notice = chunks.find((c) => c.type === 'data-tooljig-error');
  assert.ok(notice, 'the fallback is reported');
  assert.match(notice.data.message, /primary failed/);
  assert.equal(notice.transient, true);
  assert.ok(!message.parts.some((p) => p.type.startsWith('data-')), 'transient data stays out of the message');
});

test('the same bytes split differently give the same message', async () => {
  const a = await parse('answer.sse', 1);
  const b = await parse('answer.sse', 99);
  assert.deepEqual(a.message, b.message);
});

test('a call waiting for a human shows as an approval request', async () => {
  const { message, chunks } = await parse('approval.sse');
  const email = tool(message, 'send_email');
  assert.equal(email.state, 'approval-requested');
  assert.match(email.approval.id, /\S/);
  assert.deepEqual(email.input, { to: 'ana@example.com', body: 'Hi Ana' });
  assert.equal(chunks.at(-1).finishReason, 'tool-calls');
});
