// MCP both ways from Node, against the official TypeScript SDK: its client calls tooljig's
// server (guardrails, elicitation for approvals, the auth hook), and tooljig's client runs
// its server's tools under the engine's policy.
import assert from 'node:assert/strict'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js'
import { Engine, tool } from '../lib/index.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const object = (properties, required = Object.keys(properties)) => ({ type: 'object', properties, required })

function servedEngine(sent) {
  const engine = new Engine()
  engine.register('add', tool({ inputSchema: object({ a: { type: 'integer' }, b: { type: 'integer' } }), execute: ({ a, b }) => ({ sum: a + b }) }), { effect: 'read' })
  engine.register('reset', tool({ inputSchema: object({}), execute: () => 'reset' }), { scopes: ['admin'] })
  engine.register(
    'send',
    tool({ inputSchema: object({ to: { type: 'string' } }), execute: async ({ to }) => (sent.push(to), { sentTo: to }) }),
    { effect: 'external', risk: 'high', approval: { required: 'always' } },
  )
  return engine
}

/** The TypeScript SDK's client on `url`, with headers, answering elicitations with `answer`. */
async function sdkClient(url, headers, answer = undefined) {
  const client = new Client({ name: 'test', version: '1.0.0' }, { capabilities: answer ? { elicitation: {} } : {} })
  if (answer) client.setRequestHandler(ElicitRequestSchema, async (request) => answer(request.params))
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }))
  return client
}

test('the TypeScript SDK client calls tooljig’s server under its guardrails', async () => {
  const sent = []
  const server = servedEngine(sent).serveMcp({
    tokens: { 'ada-token': { principal: 'ada' }, 'root-token': { principal: 'root', scopes: ['admin'] } },
  })
  try {
    const ada = await sdkClient(server.url, { authorization: 'Bearer ada-token' })
    const { tools } = await ada.listTools()
    assert.deepEqual(tools.map((t) => t.name).sort(), ['add', 'send'])
    assert.equal(tools.find((t) => t.name === 'add').annotations.readOnlyHint, true)
    const added = await ada.callTool({ name: 'add', arguments: { a: 2, b: 3 } })
    assert.equal(added.isError, false)
    assert.deepEqual(added.structuredContent, { sum: 5 })
    const reset = await ada.callTool({ name: 'reset', arguments: {} })
    assert.equal(reset.isError, true)
    assert.match(reset.content[0].text, /scopes_missing/)
    const pending = await ada.callTool({ name: 'send', arguments: { to: 'grace' } })
    assert.match(pending.content[0].text, /pending_approval/, 'a client that cannot be asked gets the envelope')
    await ada.close()

    const root = await sdkClient(server.url, { authorization: 'Bearer root-token' })
    assert.equal((await root.listTools()).tools.length, 3)
    await root.close()

    const yes = await sdkClient(server.url, { authorization: 'Bearer ada-token' }, (params) => {
      assert.match(params.message, /send/)
      return { action: 'accept', content: { approve: true } }
    })
    const approved = await yes.callTool({ name: 'send', arguments: { to: 'grace' } })
    assert.equal(approved.isError, false)
    assert.deepEqual(approved.structuredContent, { sentTo: 'grace' })
    await yes.close()
    const no = await sdkClient(server.url, { authorization: 'Bearer ada-token' }, () => ({ action: 'decline' }))
    const declined = await no.callTool({ name: 'send', arguments: { to: 'eve' } })
    assert.equal(declined.isError, true)
    assert.match(declined.content[0].text, /approval_rejected/)
    await no.close()
    assert.deepEqual(sent, ['grace'], 'the declined call never ran')
  } finally {
    await server.stop()
  }
})

test('an auth hook in JavaScript decides who calls', async () => {
  const engine = new Engine()
  engine.register('whoami', tool({ inputSchema: object({}), execute: (_, ctx) => ({ principal: ctx.caller.principal, session: ctx.caller.session }) }))
  const server = engine.serveMcp({
    auth: async ({ headers }) => {
      if (!headers['x-user']) throw new Error('who are you?')
      return { principal: headers['x-user'] }
    },
  })
  try {
    const refused = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: {} }),
    })
    assert.equal(refused.status, 401)
    assert.match(await refused.text(), /who are you\?/)
    const lin = await sdkClient(server.url, { 'x-user': 'lin' })
    const out = await lin.callTool({ name: 'whoami', arguments: {} })
    assert.equal(out.structuredContent.principal, 'lin')
    assert.ok(out.structuredContent.session, 'the MCP session is the caller’s session')
    await lin.close()
  } finally {
    await server.stop()
  }
})

test('an MCP client’s model reads the tool’s view and its code gets the data', async () => {
  const engine = new Engine()
  const rows = ['a', 'b', 'c'].map((title) => ({ title }))
  engine.register('search', tool({ inputSchema: object({}), execute: () => ({ rows }), toModelOutput: (output) => ({ count: output.rows.length }) }))
  engine.register('long', tool({ inputSchema: object({}), execute: () => ({ text: 'x'.repeat(500) }) }), { modelOutputMaxChars: 10 })
  const server = engine.serveMcp()
  try {
    const client = await sdkClient(server.url, {})
    const found = await client.callTool({ name: 'search', arguments: {} })
    assert.deepEqual(found.structuredContent, { rows }, 'the data, whole')
    assert.deepEqual(JSON.parse(found.content[0].text), { ok: true, data: { count: 3 } }, 'the view')
    const said = await client.callTool({ name: 'long', arguments: {} })
    assert.equal(said.structuredContent.text.length, 500)
    assert.match(said.content[0].text, /truncated by tooljig/)
    assert.ok(said.content[0].text.length < 200, said.content[0].text)
    await client.close()
  } finally {
    await server.stop()
  }
})

test('tooljig’s client runs a TypeScript SDK server’s tools under its policy', async () => {
  const engine = new Engine()
  const client = await engine.connectMcp([process.execPath, join(here, 'fixtures', 'mcp-ts-server.mjs')], {
    prefix: 'ts_',
    tools: { multiply: { timeoutMs: 5000, scopes: ['math'] } },
  })
  try {
    assert.deepEqual([...client.tools].sort(), ['ts_fail', 'ts_multiply'])
    const { results: [refused] } = await engine.run([{ tool: 'ts_multiply', arguments: { a: 6, b: 7 } }])
    assert.equal(refused.envelope.error.code, 'scopes_missing', 'the app’s policy applies')
    const { results: out } = await engine.run(
      [
        { id: '1', tool: 'ts_multiply', arguments: { a: 6, b: 7 } },
        { id: '2', tool: 'ts_multiply', arguments: { a: 'six', b: 7 } },
        { id: '3', tool: 'ts_fail', arguments: {} },
      ],
      { caller: { scopes: ['math'] } },
    )
    assert.deepEqual(out[0].envelope, { ok: true, data: { product: 42 } })
    assert.equal(out[1].envelope.error.code, 'invalid_arguments', 'checked before it leaves')
    assert.equal(out[2].envelope.error.code, 'external_api_error')
    assert.match(out[2].envelope.error.message, /disk is full/)
  } finally {
    await client.close()
  }
  const { results: [after] } = await engine.run([{ tool: 'ts_fail', arguments: {} }])
  assert.equal(after.envelope.error.code, 'unavailable')
  assert.equal(after.envelope.error.retryable, true)
})

const example = join(here, '..', '..', 'examples', 'node', 'mcp_server.mjs')

test('the example serves and calls both ways', async () => {
  const { spawnSync } = await import('node:child_process')
  const r = spawnSync(process.execPath, [example], { encoding: 'utf8', timeout: 30_000 })
  assert.equal(r.status, 0, r.stderr)
  const [ada, bob] = r.stdout.trim().split('\n')
  assert.match(ada, /^ada-token \["remote_add","remote_find_customer"\] .*"foundBy":"ada"/)
  assert.equal(bob, 'bob-token ["remote_add"] [{"ok":true,"data":{"sum":5}}]')
})

test('a Node engine served over stdio is reached by tooljig’s client', async () => {
  const engine = new Engine()
  const client = await engine.connectMcp([process.execPath, example, '--stdio'], { prefix: 'ex_' })
  try {
    const { results } = await engine.run([{ tool: 'ex_find_customer', arguments: { name: 'Acme' } }])
    assert.deepEqual(results[0].envelope, { ok: true, data: { name: 'Acme', foundBy: 'local-user' } })
  } finally {
    await client.close()
  }
})

test('a command that is no MCP server fails to connect clearly', async () => {
  const engine = new Engine()
  await assert.rejects(
    engine.connectMcp([process.execPath, '-e', 'console.log("hello"); setTimeout(() => {}, 30000)'], { connectTimeoutMs: 500 }),
    (e) => e.code === 'unavailable' && /did not initialize/.test(e.message),
  )
})
