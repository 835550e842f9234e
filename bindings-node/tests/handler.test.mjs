// Handlers: sync or Promise, values, undefined, needs, ToolError, unexpected throws.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, ToolError, needs, tool } from '../lib/index.mjs'

async function runOne(execute, args = {}, policy = undefined) {
  const e = new Engine().register('t', tool({ execute }), policy)
  const out = await e.run([{ id: 'a', tool: 't', arguments: args }])
  return out.results[0]
}

test('sync and Promise handlers return data', async () => {
  assert.deepEqual((await runOne(() => ({ x: 1 }))).envelope, { ok: true, data: { x: 1 } })
  assert.deepEqual((await runOne(async () => [1, 'two'])).envelope, { ok: true, data: [1, 'two'] })
  assert.deepEqual((await runOne(() => Promise.resolve('p'))).envelope, { ok: true, data: 'p' })
  assert.deepEqual((await runOne((args) => args, { k: [1, { z: null }] })).envelope, { ok: true, data: { k: [1, { z: null }] } })
})

test('undefined becomes null; values take their JSON form', async () => {
  assert.equal(JSON.stringify((await runOne(() => undefined)).envelope), '{"ok":true,"data":null}')
  assert.equal(JSON.stringify((await runOne(async () => {})).envelope), '{"ok":true,"data":null}')
  const when = new Date('2026-01-02T03:04:05.000Z')
  assert.deepEqual((await runOne(() => ({ when, gone: undefined }))).envelope, { ok: true, data: { when: '2026-01-02T03:04:05.000Z' } })
})

test('the context carries call id, tool, attempt, caller and a signal', async () => {
  let seen
  const e = new Engine().register('t', tool({ execute: (args, ctx) => { seen = ctx; return null } }))
  await e.run([{ id: 'c1', tool: 't', arguments: {} }], { caller: { principal: 'u1', scopes: ['a'], attributes: { dept_id: 3 } } })
  assert.equal(seen.callId, 'c1')
  assert.equal(seen.tool, 't')
  assert.equal(seen.attempt, 1)
  assert.deepEqual(seen.caller, { principal: 'u1', tenant: null, roles: [], scopes: ['a'], attributes: { dept_id: 3 }, session: null })
  assert.ok(Object.isFrozen(seen.caller))
  assert.ok(seen.signal instanceof AbortSignal)
  assert.equal(seen.signal.aborted, false)
})

test('a thrown ToolError chooses the code, retryability and details', async () => {
  const r = await runOne(() => { throw new ToolError('not_found', 'no lead 3; search by name first', { details: { lead_id: 3 } }) })
  assert.equal(JSON.stringify(r.envelope), '{"ok":false,"error":{"code":"not_found","message":"no lead 3; search by name first","retryable":false,"lead_id":3}}')
  assert.equal(r.detail, undefined)
  const rejected = await runOne(async () => { throw new ToolError('external_api_error', 'upstream 503', { retryable: false }) })
  assert.deepEqual(rejected.envelope.error, { code: 'external_api_error', message: 'upstream 503', retryable: false })
  assert.throws(() => new ToolError('nope', 'x'), TypeError)
})

test('needs(...) returned or thrown gives the needs envelope', async () => {
  assert.equal(JSON.stringify((await runOne(() => needs('date', 'time'))).envelope), '{"ok":false,"needs":{"date":true,"time":true}}')
  assert.deepEqual((await runOne(async () => { throw needs(['who']) })).envelope, { ok: false, needs: { who: true } })
})

test('a plain throw or rejection is internal_error; the stack is on the result, not in the message', async () => {
  for (const execute of [
    () => { throw new Error('db password is hunter2') },
    async () => { throw new Error('db password is hunter2') },
    () => Promise.reject(new Error('db password is hunter2')),
  ]) {
    const r = await runOne(execute)
    assert.equal(r.envelope.error.code, 'internal_error')
    assert.doesNotMatch(JSON.stringify(r.envelope), /hunter2/)
    assert.match(r.detail, /Error: db password is hunter2\n\s+at /)
  }
})

test('throwing non-Errors and returning non-JSON values are internal errors too', async () => {
  const s = await runOne(() => { throw 'just a string' })
  assert.equal(s.envelope.error.code, 'internal_error')
  assert.match(s.detail, /just a string/)
  const n = await runOne(async () => Promise.reject(null))
  assert.equal(n.envelope.error.code, 'internal_error')
  const big = await runOne(() => ({ n: 10n }))
  assert.equal(big.envelope.error.code, 'internal_error')
  assert.match(big.detail, /not JSON.*BigInt/s)
  const cyclic = {}
  cyclic.self = cyclic
  assert.match((await runOne(() => cyclic)).detail, /circular/i)
})

test('retryable failures are retried; attempts count and the context sees each attempt', async () => {
  const attempts = []
  const r = await runOne((args, ctx) => {
    attempts.push(ctx.attempt)
    if (ctx.attempt < 3) throw new ToolError('external_api_error', 'transient')
    return 'ok'
  }, {}, { retry: { attempts: 3, backoffMs: 1 } })
  assert.deepEqual(r.envelope, { ok: true, data: 'ok' })
  assert.equal(r.attempts, 3)
  assert.deepEqual(attempts, [1, 2, 3])
})

test('a throwing handler leaves the engine usable for the next batch', async () => {
  const e = new Engine().register('boom', tool({ execute: () => { throw new Error('x') } })).register('ok', tool({ execute: () => 1 }))
  for (let i = 0; i < 3; i++) {
    const out = await e.run([{ tool: 'boom' }, { tool: 'ok' }])
    assert.equal(out.results[0].envelope.error.code, 'internal_error')
    assert.deepEqual(out.results[1].envelope, { ok: true, data: 1 })
  }
})

test('details of a ToolError never override its code, message or retryability', async () => {
  const r = await runOne(() => {
    throw new ToolError('not_found', 'no such lead', { details: { code: 'ok', message: 'pwned', retryable: true, id: 3 } })
  })
  assert.deepEqual(r.envelope, { ok: false, error: { code: 'not_found', message: 'no such lead', retryable: false, id: 3 } })
})

test('a hostile result fails its own call alone; its neighbours keep theirs, and nothing crashes', async () => {
  const nested = (n) => {
    let v = 1
    for (let i = 0; i < n; i++) v = [v]
    return v
  }
  const hostile = new Proxy({}, {
    get() { throw new Error('get trap') },
    getPrototypeOf() { throw new Error('prototype trap') },
    ownKeys() { throw new Error('keys trap') },
    getOwnPropertyDescriptor() { throw new Error('descriptor trap') },
    has() { throw new Error('has trap') },
  })
  const badString = { toString() { throw new Error('toString') }, get stack() { throw new Error('stack') } }
  const cases = {
    surrogate: () => ({ text: 'a\ud800b' }),
    deep: () => nested(130),
    proxy: () => hostile,
    proxyAsync: async () => hostile,
    rejectsUnprintable: () => Promise.reject(badString),
    throwsUnprintable: () => { throw badString },
    throwsProxy: () => { throw hostile },
    thenGetter: () => ({ get then() { throw new Error('then getter') } }),
    thenThrows: () => ({ then() { throw new Error('then') } }),
    fine: () => 'fine',
  }
  const e = new Engine()
  for (const [name, execute] of Object.entries(cases)) e.register(name, tool({ execute }))
  const t0 = Date.now()
  const out = await e.run(Object.keys(cases).map((name) => ({ id: name, tool: name })))
  assert.ok(Date.now() - t0 < 2000, 'no call waited for a timeout')
  const code = (id) => out.results.find((r) => r.callId === id).envelope.error?.code ?? 'ok'
  assert.equal(code('fine'), 'ok')
  assert.equal(code('surrogate'), 'invalid_output')
  assert.equal(code('deep'), 'invalid_output')
  for (const id of ['proxy', 'proxyAsync', 'rejectsUnprintable', 'throwsUnprintable', 'throwsProxy', 'thenGetter', 'thenThrows']) {
    assert.equal(code(id), 'internal_error', id)
  }
  // The engine goes on.
  const again = await e.run([{ id: 'x', tool: 'fine' }])
  assert.deepEqual(again.results[0].envelope, { ok: true, data: 'fine' })
})

test('ctx.idempotencyKey is stable for a call: the same on every attempt, from the app key when given', async () => {
  const keys = []
  const e = new Engine().register('pay', tool({
    execute: (_, ctx) => {
      keys.push([ctx.callId, ctx.attempt, ctx.idempotencyKey, ctx.runId])
      if (ctx.attempt === 1) throw new ToolError('external_api_error', 'flaky', { retryable: true })
      return 'paid'
    },
  }), { retry: { attempts: 2, backoffMs: 1 }, effectClass: 'idempotent' })
  const out = await e.run([{ id: 'a', tool: 'pay' }, { id: 'b', tool: 'pay', idempotencyKey: 'req-42' }])
  assert.ok(out.results.every((r) => r.envelope.ok))
  const of = (id) => keys.filter(([c]) => c === id).map(([, , k]) => k)
  assert.equal(new Set(of('a')).size, 1, 'one key across attempts')
  assert.match(of('a')[0], /^tj_[0-9a-f]{32}$/)
  assert.notEqual(of('a')[0], of('b')[0])
  // From the app's key: another batch (another run) with the same key gets the same one.
  await e.run([{ id: 'other', tool: 'pay', idempotencyKey: 'req-42' }])
  assert.equal(keys.at(-1)[2], of('b')[0])
  assert.ok(keys[0][3].startsWith('run_'))
})
