// Streams from Node: recorded provider streams replay exactly in any split; a stream cut
// inside a call's arguments reports it incomplete; tooljig's events become an AI SDK UI
// message stream that the real `ai` package reads.
import assert from 'node:assert/strict'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { readUIMessageStream, uiMessageChunkSchema } from 'ai'
import { ModelTurn, ProviderError, StreamParser, UiMessageStream, parseStream, toUiMessageStream } from '../lib/index.mjs'
import { corpus } from './corpora.mjs'

/** Feeds `bytes` in pieces of `size` bytes; returns every event and the turn. */
function inPieces(provider, bytes, size) {
  const parser = new StreamParser(provider)
  const events = []
  for (let i = 0; i < bytes.length; i += size) events.push(...parser.push(bytes.subarray(i, i + size)))
  const last = parser.finish()
  return { events: [...events, ...last.events], turn: last.turn }
}

const wire = [
  ['openai_chat', corpus('wire/openai-chat-sse'), '.bin'],
  ['anthropic', corpus('wire/anthropic-messages-sse'), '.txt'],
]

for (const [provider, { dir, skip }, ext] of wire) {
  test(`recorded ${provider} streams replay the same in any split`, { skip }, () => {
    const files = readdirSync(dir).filter((f) => f.endsWith(ext))
    assert.ok(files.length > 0)
    for (const f of files) {
      const bytes = readFileSync(join(dir, f))
      const whole = parseStream(provider, bytes)
      for (const size of [1, 7, 64, 1000]) {
        const split = inPieces(provider, bytes, size)
        assert.deepEqual(split.turn, whole.turn, `${f} in pieces of ${size}`)
        // Argument deltas may group differently; the calls' starts and ends may not.
        const shape = (evs) => evs.filter((e) => e.type !== 'tool_input_delta' && e.type !== 'text_delta').map((e) => JSON.stringify(e))
        assert.deepEqual(shape(split.events), shape(whole.events), `${f} in pieces of ${size}`)
        const text = (evs) => evs.filter((e) => e.type === 'text_delta').map((e) => e.delta).join('')
        assert.equal(text(split.events), text(whole.events), f)
      }
    }
  })
}

test('an Anthropic stream cut at max_tokens inside the arguments: incomplete, never run', { skip: corpus('wire/anthropic-messages-sse').skip }, () => {
  const { dir } = corpus('wire/anthropic-messages-sse')
  const { events, turn } = parseStream('anthropic', readFileSync(join(dir, 'incomplete_partial_json_response.txt')))
  const incomplete = events.filter((e) => e.type === 'tool_input_incomplete')
  assert.equal(incomplete.length, 1)
  assert.equal(incomplete[0].tool, 'make_file')
  assert.equal(typeof incomplete[0].partial, 'object')
  assert.equal(turn.finishReason, 'length')
  assert.equal(turn.toolCalls.at(-1).incomplete, true)
  const { calls, refused } = ModelTurn.intoBatch(turn)
  assert.equal(calls.length, 0)
  assert.equal(refused[0].envelope.error.code, 'incomplete_arguments')
})

test('OpenAI parallel calls stream with partial arguments; an error event is a ProviderError', () => {
  const chunk = (delta, finish = null) => `data: ${JSON.stringify({ choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`
  const sse =
    chunk({ role: 'assistant', tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '' } }] }) +
    chunk({ tool_calls: [{ index: 0, function: { arguments: '{"city": "Pa' } }] }) +
    chunk({ tool_calls: [{ index: 0, function: { arguments: 'ris"}' } }] }) +
    chunk({ tool_calls: [{ index: 1, id: 'call_2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Rome"}' } }] }) +
    chunk({}, 'tool_calls') +
    'data: [DONE]\n\n'
  const parser = new StreamParser('openai_chat')
  const events = parser.push(new TextEncoder().encode(sse))
  const deltas = events.filter((e) => e.type === 'tool_input_delta' && e.callId === 'call_1')
  assert.deepEqual(deltas[0].partial, { city: 'Pa' })
  const { turn } = parser.finish()
  assert.deepEqual(turn.toolCalls.map((c) => c.id), ['call_1', 'call_2'])
  assert.deepEqual(events.filter((e) => e.type === 'tool_input_available').map((e) => e.input.city), ['Paris', 'Rome'])
  assert.throws(() => parser.push('data: {}\n\n'), /already finished/)
  const failing = new StreamParser('anthropic')
  assert.throws(() => failing.push('event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'), ProviderError)
})

test('tooljig events as a UI message stream that the ai package reads', async () => {
  const events = [
    { type: 'start', runId: 'r1' },
    { type: 'step_start', step: 1 },
    { type: 'tool_input_start', callId: 'c1', tool: 'get_weather' },
    { type: 'tool_input_delta', callId: 'c1', delta: '{"city":"Paris"}' },
    { type: 'tool_input_available', callId: 'c1', tool: 'get_weather', input: { city: 'Paris' } },
    { type: 'tool_output_available', callId: 'c1', tool: 'get_weather', output: { ok: true, data: { tempC: 21 } } },
    { type: 'step_finish', step: 1, finishReason: 'tool_calls', usage: { inputTokens: 5, outputTokens: 3 } },
    { type: 'step_start', step: 2 },
    { type: 'text_delta', delta: 'It is ' },
    { type: 'text_delta', delta: '21°C.' },
    { type: 'step_finish', step: 2, finishReason: 'stop', usage: { inputTokens: 9, outputTokens: 4 } },
    { type: 'finish', finishReason: 'stop' },
  ]
  assert.equal(UiMessageStream.HEADERS['x-vercel-ai-ui-message-stream'], 'v1')
  const ui = new UiMessageStream('m1')
  const text = events.map((e) => ui.encode(e)).join('') + ui.done()
  assert.equal(text, toUiMessageStream('m1', events))
  assert.ok(text.endsWith('data: [DONE]\n\n'))
  const chunks = text.split('\n\n').filter((f) => f.startsWith('data: ') && f !== 'data: [DONE]').map((f) => JSON.parse(f.slice(6)))
  for (const c of chunks) assert.ok((await uiMessageChunkSchema().validate(c)).success, JSON.stringify(c))
  const stream = new ReadableStream({
    start(controller) {
      for (const c of chunks) controller.enqueue(c)
      controller.close()
    },
  })
  let message
  for await (const m of readUIMessageStream({ stream })) message = m
  assert.equal(message.id, 'm1')
  const tool = message.parts.find((p) => p.type === 'tool-get_weather')
  assert.equal(tool.state, 'output-available')
  assert.deepEqual(tool.output, { ok: true, data: { tempC: 21 } })
  assert.equal(message.parts.filter((p) => p.type === 'text').map((p) => p.text).join(''), 'It is 21°C.')
  assert.throws(() => ui.encode({ type: 'nonsense' }), /event/)
})
