// The core's HTTP model clients from Node, against a local node:http server replaying
// recorded provider streams (no network): streams replay exactly, a stream cut inside a
// call's arguments never runs the call, a 429 is retried, extra headers go with every request.
import assert from 'node:assert/strict'
import { readFileSync, readdirSync } from 'node:fs'
import { createServer } from 'node:http'
import { join } from 'node:path'
import { test } from 'node:test'
import { Agent, AgentState, Engine, HttpModel, ModelError, parseStream } from '../lib/index.mjs'
import { corpus } from './corpora.mjs'

/**
 * A local server answering request n with `reply(n, request)`: `{status, headers, body}`,
 * the body written in chunks of `chunk` bytes. Records every request.
 */
async function serve(reply, chunk = 64) {
  const requests = []
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', async () => {
      requests.push({ path: req.url, headers: req.headers, body: body ? JSON.parse(body) : null })
      const r = reply(requests.length - 1)
      res.writeHead(r.status ?? 200, r.headers ?? { 'content-type': 'text/event-stream' })
      const bytes = Buffer.from(r.body)
      for (let i = 0; i < bytes.length; i += chunk) {
        res.write(bytes.subarray(i, i + chunk))
        await new Promise((resolve) => setImmediate(resolve))
      }
      res.end()
    })
  })
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  // Closing ends every connection: a model client done with a stream before this server
  // finished writing it keeps the connection, which then held `close` for the client's idle
  // timeout (90 s in some runs).
  const close = () =>
    new Promise((resolve) => {
      server.close(resolve)
      server.closeAllConnections()
    })
  return { url: `http://127.0.0.1:${server.address().port}`, requests, close }
}

const request = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }

const openai = corpus('wire/openai-chat-sse')
test('recorded OpenAI streams replay over HTTP into the same turn', { skip: openai.skip }, async () => {
  const files = readdirSync(openai.dir).filter((f) => f.endsWith('.bin'))
  assert.ok(files.length > 0)
  for (const f of files) {
    const bytes = readFileSync(join(openai.dir, f))
    const server = await serve(() => ({ body: bytes }))
    try {
      const model = HttpModel.openaiCompatible('gpt-test', { baseUrl: server.url, apiKey: 'k' })
      const turn = await model.respond(request)
      assert.deepEqual(turn, parseStream('openai_chat', bytes).turn, f)
      assert.equal(server.requests[0].path, '/chat/completions')
      assert.equal(server.requests[0].headers.authorization, 'Bearer k')
      assert.equal(server.requests[0].body.stream, true)
    } finally {
      await server.close()
    }
  }
})

const anthropic = corpus('wire/anthropic-messages-sse')
test('an Anthropic stream cut inside make_file\'s arguments never runs it; the run still answers', { skip: anthropic.skip }, async () => {
  const cut = readFileSync(join(anthropic.dir, 'incomplete_partial_json_response.txt'))
  const done = readFileSync(join(anthropic.dir, 'basic_response.txt'))
  const server = await serve((n) => ({ body: n === 0 ? cut : done }), 31)
  const made = []
  const engine = new Engine()
  engine.register('make_file', {
    description: 'Writes a file.',
    inputSchema: { type: 'object', properties: { filename: { type: 'string' }, lines_of_text: { type: 'array' } }, required: ['filename'] },
    execute: (args) => made.push(args),
  })
  process.env.TOOLJIG_NODE_TEST_KEY = 'secret'
  try {
    const model = HttpModel.anthropic('claude-test', { baseUrl: server.url, apiKeyEnv: 'TOOLJIG_NODE_TEST_KEY' })
    const run = new Agent(engine, model).run(new AgentState('Write me a tax guide in taxes.txt'))
    const events = []
    for await (const e of run) events.push(e)
    const out = await run
    assert.deepEqual(made, [], 'the cut-off call never ran')
    assert.equal(out.answer, 'Hello there!')
    assert.equal(out.counters.failuresByCode.incomplete_arguments, 1)
    assert.ok(events.some((e) => e.type === 'tool_input_incomplete' && e.tool === 'make_file'))
    assert.equal(server.requests[0].path, '/v1/messages')
    assert.equal(server.requests[0].headers['x-api-key'], 'secret')
    const result = server.requests[1].body.messages[2].content[0]
    assert.equal(result.type, 'tool_result')
    assert.equal(result.is_error, true)
    assert.match(result.content, /incomplete_arguments/)
  } finally {
    delete process.env.TOOLJIG_NODE_TEST_KEY
    await server.close()
  }
})

test('a 429 is retried after the server\'s retry-after; a 401 is not', async () => {
  const sse =
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] })}\n\n` +
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`
  const server = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after-ms': '5', 'content-type': 'application/json' }, body: '{"error":"slow down"}' } : { body: sse }))
  try {
    const model = HttpModel.openaiCompatible('gpt-test', { baseUrl: server.url, apiKey: 'k', maxRetries: 2, initialBackoffMs: 1 })
    const turn = await model.respond(request)
    assert.equal(turn.content, 'Hello')
    assert.equal(server.requests.length, 2)
  } finally {
    await server.close()
  }
  const refusing = await serve(() => ({ status: 401, headers: { 'content-type': 'application/json' }, body: '{"error":"bad key"}' }))
  try {
    const model = HttpModel.openaiCompatible('gpt-test', { baseUrl: refusing.url, apiKey: 'wrong', maxRetries: 3, initialBackoffMs: 1 })
    await assert.rejects(model.respond(request), (e) => e instanceof ModelError && e.kind === 'auth' && e.status === 401)
    assert.equal(refusing.requests.length, 1)
  } finally {
    await refusing.close()
  }
  assert.throws(() => HttpModel.openaiCompatible('m', { baseURL: 'x' }), /baseURL|base_u_r_l/)
})

test('extra headers go with every request, retries included, names as written', async () => {
  const sse =
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: { role: 'assistant', content: 'Hello' }, finish_reason: null }] })}\n\n` +
    `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] })}\n\ndata: [DONE]\n\n`
  const server = await serve((n) => (n === 0 ? { status: 429, headers: { 'retry-after-ms': '5', 'content-type': 'application/json' }, body: '{}' } : { body: sse }))
  try {
    const headers = { 'X-Gateway-Key': 'g-1', 'OpenAI-Organization': 'org-7', xTraceId: 't-9' }
    const model = HttpModel.openaiCompatible('gpt-test', { baseUrl: server.url, apiKey: 'k', maxRetries: 1, initialBackoffMs: 1, headers })
    assert.equal((await model.respond(request)).content, 'Hello')
    assert.equal(server.requests.length, 2)
    for (const r of server.requests) {
      assert.equal(r.headers['x-gateway-key'], 'g-1')
      assert.equal(r.headers['openai-organization'], 'org-7')
      assert.equal(r.headers.xtraceid, 't-9', 'a camelCase name is not renamed like an option')
      assert.equal(r.headers.authorization, 'Bearer k')
    }
  } finally {
    await server.close()
  }
  assert.throws(() => HttpModel.openaiCompatible('m', { headers: { 'bad name': 'v' } }), /header name/)
  assert.throws(() => HttpModel.anthropic('m', { headers: { 'x-a': 'line\nbreak' } }), /header value/)
  assert.throws(() => HttpModel.gemini('m', { headers: { 'x-a': 1 } }), /object of header names/)
  assert.throws(() => HttpModel.gemini('m', { headers: [['x-a', 'v']] }), /object of header names/)
})
