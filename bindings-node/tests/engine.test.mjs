// Engine basics: registration, batches, specs, the casing rule and the envelope bytes.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, tool } from '../lib/index.mjs'
import { byId, msSchema, sleep } from './support.mjs'

function engine() {
  const e = new Engine()
  e.register('add', tool({
    description: 'Adds two numbers.',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
    execute: ({ a, b }) => a + b,
  }))
  e.register('sleep', tool({ inputSchema: msSchema, execute: async ({ ms, v }) => { await sleep(ms); return { slept: ms, v: v ?? null } } }))
  return e
}

test('a batch returns one result per call, in call order, with the envelope bytes of Rust', async () => {
  const out = await engine().run([
    { id: '1', tool: 'add', arguments: '{"a": 1, "b": 2,}' },
    { id: '2', tool: 'add', arguments: { a: 5, b: 5 } },
    { id: '3', tool: 'ad', arguments: {} },
  ])
  assert.deepEqual(out.results.map((r) => r.callId), ['1', '2', '3'])
  assert.equal(JSON.stringify(out.results[0].envelope), '{"ok":true,"data":3}')
  assert.equal(out.results[0].repaired, true)
  assert.equal(out.results[1].repaired, false)
  const unknown = out.results[2].envelope
  assert.equal(unknown.error.code, 'unknown_tool')
  assert.deepEqual(unknown.error.suggestions, ['add'])
  assert.equal(typeof out.durationUs, 'number')
})

test('results are plain objects with camelCase keys, ready for JSON.stringify', async () => {
  const out = await engine().run([{ id: 'a', tool: 'add', arguments: { a: 1, b: 1 } }])
  const r = out.results[0]
  assert.equal(Object.getPrototypeOf(r), Object.prototype)
  for (const key of ['callId', 'tool', 'status', 'envelope', 'attempts', 'repaired', 'replayed', 'cached', 'finishedUs', 'durationUs']) {
    assert.ok(key in r, `missing ${key}`)
  }
  assert.ok(!Object.keys(r).some((k) => k.includes('_')), Object.keys(r).join())
  assert.deepEqual(JSON.parse(JSON.stringify(out)), out)
})

test('dependent calls take data from earlier results and run after them', async () => {
  const out = await engine().run([
    { id: 'a', tool: 'sleep', arguments: { ms: 30, v: { id: 7 } } },
    { id: 'b', tool: 'sleep', arguments: { ms: 30 } },
    { id: 'c', tool: 'sleep', arguments: { ms: 1, v: { $from: 'a', pointer: '/v/id' } } },
    { id: 'd', tool: 'sleep', arguments: { ms: 1 }, dependsOn: ['b'] },
  ])
  const [a, b, c, d] = ['a', 'b', 'c', 'd'].map((id) => byId(out, id))
  assert.deepEqual(c.envelope, { ok: true, data: { slept: 1, v: 7 } })
  assert.ok(c.startedUs >= a.finishedUs)
  assert.ok(d.startedUs >= b.finishedUs)
  assert.ok(b.startedUs < a.finishedUs, 'a and b overlap')
})

test('camelCase and snake_case call and option keys mean the same', async () => {
  const e = engine()
  const calls = (key) => [
    { id: 'x', tool: 'add', arguments: { a: 1 } },
    { id: 'y', tool: 'add', arguments: { a: 1, b: 2 }, [key]: ['x'] },
  ]
  for (const [depKey, maxKey] of [['dependsOn', 'maxCalls'], ['depends_on', 'max_calls']]) {
    const out = await e.run(calls(depKey), { [maxKey]: 5 })
    assert.equal(byId(out, 'y').envelope.error.code, 'dependency_failed', depKey)
  }
  const limited = await e.run([{ tool: 'add', arguments: { a: 1, b: 1 } }, { tool: 'add', arguments: { a: 1, b: 1 } }], { maxCalls: 1 })
  assert.equal(limited.results[1].envelope.error.code, 'too_many_calls')
  assert.deepEqual(limited.results.map((r) => r.callId), ['call_0', 'call_1'])
})

test('an ill-formed call is an API mistake and rejects the run', async () => {
  await assert.rejects(engine().run([{ id: 'a', name: 'add' }]), /calls\[0\]/)
  await assert.rejects(engine().run({ id: 'a' }), TypeError)
  await assert.rejects(engine().run([], { deadline: 5 }), /unknown field/)
})

test('specs export every tool in registration order with camelCase keys', () => {
  const specs = engine().specs()
  assert.deepEqual(specs.map((s) => s.name), ['add', 'sleep'])
  assert.equal(specs[0].description, 'Adds two numbers.')
  assert.deepEqual(specs[0].inputSchema.required, ['a', 'b'])
  assert.equal(specs[0].policy.timeoutMs, 30000)
  assert.equal(specs[0].policy.retry.attempts, 1)
  assert.equal(specs[0].policy.retry.maxBackoffMs, 5000)
})

test('a tool registered from its spec round-trips through specs()', async () => {
  const e = new Engine()
  const spec = { name: 'echo', description: 'Echoes.', input_schema: { type: 'object' }, policy: { timeout_ms: 1000, retry: { attempts: 2, backoff_ms: 5 } } }
  e.registerSpec(spec, (args) => args)
  const [exported] = e.specs()
  assert.equal(exported.policy.timeoutMs, 1000)
  assert.equal(exported.policy.retry.backoffMs, 5)
  const again = new Engine().registerSpec(exported, (args) => args)
  assert.deepEqual(again.specs(), e.specs())
  const out = await e.run([{ id: 'a', tool: 'echo', arguments: { x: 1 } }])
  assert.deepEqual(out.results[0].envelope, { ok: true, data: { x: 1 } })
})

test('a tool without execute is client-side: its calls end pending_external', async () => {
  const e = new Engine().register('confirm', tool({ description: 'Asks the user.', inputSchema: { type: 'object' } }))
  const out = await e.run([{ id: 'a', tool: 'confirm', arguments: {} }])
  assert.equal(out.results[0].status, 'pending_external')
  assert.equal(out.results[0].envelope.error.code, 'pending_external')
})

test('engine limits apply to arguments', async () => {
  const e = new Engine({ limits: { maxArgumentBytes: 16 } })
  e.register('t', tool({ execute: () => 1 }))
  const out = await e.run([{ id: 'a', tool: 't', arguments: { text: 'x'.repeat(100) } }])
  assert.equal(out.results[0].envelope.error.code, 'arguments_too_large')
  assert.throws(() => new Engine({ limit: {} }), /unknown option "limit"/)
})

test('schemas may $ref in-memory schema resources', async () => {
  const e = new Engine({ schemaResources: { 'https://example.com/id.json': { type: 'integer' } } })
  e.register('get', tool({ inputSchema: { type: 'object', properties: { id: { $ref: 'https://example.com/id.json' } } }, execute: ({ id }) => id }))
  const out = await e.run([{ id: 'a', tool: 'get', arguments: { id: 'x' } }, { id: 'b', tool: 'get', arguments: { id: 4 } }])
  assert.equal(out.results[0].envelope.error.code, 'invalid_arguments')
  assert.deepEqual(out.results[1].envelope, { ok: true, data: 4 })
})

test('one call whose arguments JSON cannot carry is refused alone; the batch runs', async () => {
  const e = new Engine().register('echo', tool({ execute: (a) => a }))
  let deep = 1
  for (let i = 0; i < 200; i++) deep = [deep]
  const cyclic = {}
  cyclic.self = cyclic
  const hostile = {
    bigint: { n: 10n },
    nan: { x: NaN },
    inf: { x: -Infinity },
    surrogate: { s: 'a\ud800b' },
    deep: { d: deep },
    cyclic,
  }
  const calls = Object.entries(hostile).map(([id, args]) => ({ id, tool: 'echo', arguments: args }))
  calls.push({ id: 'fine', tool: 'echo', arguments: { ok: 'a\ud83d\ude00b' } })
  const out = await e.run(calls)
  const result = Object.fromEntries(out.results.map((r) => [r.callId, r]))
  for (const id of Object.keys(hostile)) {
    assert.equal(result[id].envelope.error?.code, 'invalid_arguments', id)
    assert.match(result[id].envelope.error.message, /could not be read/, id)
  }
  assert.deepEqual(result.fine.envelope, { ok: true, data: { ok: 'a\ud83d\ude00b' } })
})
