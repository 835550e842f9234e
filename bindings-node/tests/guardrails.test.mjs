// Guardrails through Node: enabled flags, visibility, the policy hook and resolvers as JS
// functions, hidden arguments, audit and telemetry.
import assert from 'node:assert/strict'
import { test } from 'node:test'
import { Engine, ToolError, tool } from '../lib/index.mjs'

const relay = {
  type: 'object',
  properties: { message: { type: 'string' }, department: { type: 'string' } },
  required: ['message', 'department'],
}

test('the policy hook sees final arguments (hidden ones filled) and may be async', async () => {
  const seen = []
  const e = new Engine({
    audit: 'memory',
    policyHook: async (req) => {
      seen.push(req)
      return req.arguments.department === 'hr' ? { allow: false, reason: 'not within your departments' } : true
    },
  })
  e.register('relay', tool({ inputSchema: relay, execute: (a) => a }), { hidden: { department: { from: 'attribute', name: 'department' } } })
  const out = await e.run([{ id: 'a', tool: 'relay', arguments: { message: 'hi', department: 'it' } }], { caller: { principal: 'u1', attributes: { department: 'hr' } } })
  assert.deepEqual(out.results[0].envelope.error, { code: 'permission_denied', message: 'not within your departments', retryable: false })
  assert.equal(seen[0].callId, 'a')
  assert.equal(seen[0].caller.principal, 'u1')
  assert.deepEqual(seen[0].arguments, { message: 'hi', department: 'hr' })
  const ok = await e.run([{ tool: 'relay', arguments: { message: 'hi' } }], { caller: { principal: 'u2', attributes: { department: 'it' } } })
  assert.deepEqual(ok.results[0].envelope, { ok: true, data: { message: 'hi', department: 'it' } })
})

test('a policy hook that throws or returns nothing fails closed', async () => {
  for (const policyHook of [() => { throw new Error('db down') }, () => undefined, async () => 'yes']) {
    const e = new Engine({ policyHook }).register('t', tool({ execute: () => 1 }))
    const out = await e.run([{ tool: 't' }])
    assert.equal(out.results[0].envelope.ok, false, String(policyHook))
  }
})

test('resolvers are JS functions: found, not_found, ambiguous, and thrown ToolErrors', async () => {
  const e = new Engine({
    resolvers: {
      contacts: async ({ value, caller }) => {
        if (value === 'Aviad') return { status: 'found', value: `conn_42_${caller.principal}` }
        if (value === 'Dana') return { status: 'ambiguous', candidates: [{ name: 'Dana Levi' }, { name: 'Dana Cohen' }] }
        if (value === 'Boom') throw new ToolError('external_api_error', 'directory unavailable')
        return { status: 'not_found' }
      },
    },
  })
  e.register('meet', tool({
    inputSchema: { type: 'object', properties: { who: { type: 'string' }, connectionId: { type: 'string' } }, required: ['who', 'connectionId'] },
    execute: (a) => a,
  }), { hidden: { connectionId: { from: 'resolver', resolver: 'contacts', input: 'who' } } })
  const out = await e.run(['Aviad', 'Dana', 'Zed', 'Boom'].map((who) => ({ tool: 'meet', arguments: { who, connectionId: 'forged' } })), { caller: { principal: 'u1' } })
  assert.deepEqual(out.results[0].envelope, { ok: true, data: { who: 'Aviad', connectionId: 'conn_42_u1' } })
  assert.equal(out.results[1].envelope.error.code, 'ambiguous')
  assert.equal(out.results[1].envelope.error.candidates.length, 2)
  assert.equal(out.results[2].envelope.error.code, 'not_found')
  assert.equal(out.results[3].envelope.error.code, 'external_api_error')
  const [spec] = e.specs({ principal: 'u1' })
  assert.deepEqual(Object.keys(spec.inputSchema.properties), ['who'], 'hidden parameters are not shown to the model')
})

test('enabled flags hide and refuse tools; setSettings applies to later calls', async () => {
  const e = new Engine({ settings: { system: { b: false } } })
    .register('a', tool({ execute: () => 'a' }))
    .register('b', tool({ execute: () => 'b' }))
  assert.deepEqual(e.specs({ principal: 'u' }).map((s) => s.name), ['a'])
  assert.deepEqual(e.specs().map((s) => s.name), ['a', 'b'])
  const out = await e.run([{ tool: 'b' }], { caller: { principal: 'u' } })
  assert.equal(out.results[0].envelope.ok, false)
  e.setSettings({ system: {} })
  const again = await e.run([{ tool: 'b' }], { caller: { principal: 'u' } })
  assert.deepEqual(again.results[0].envelope, { ok: true, data: 'b' })
})

test('every call is audited, refusals included, on an intact hash chain', async () => {
  const e = new Engine({ audit: 'memory' }).register('t', tool({ inputSchema: { type: 'object', required: ['x'] }, execute: () => 1 }))
  await e.run([{ id: 'a', tool: 't', arguments: { x: 1 } }, { id: 'b', tool: 't', arguments: {} }, { id: 'c', tool: 'nope' }], { caller: { principal: 'u1' } })
  const records = await e.audit()
  assert.deepEqual(records.map((r) => r.callId).sort(), ['a', 'b', 'c'], 'one record per call, in completion order')
  assert.equal(records[0].principal, 'u1')
  assert.deepEqual((await e.audit({ callId: 'b' })).map((r) => r.callId), ['b'])
  const chain = await e.verifyAudit()
  assert.equal(chain.records, 3)
  assert.equal(chain.broken ?? null, null)
  await assert.rejects(new Engine().audit(), /no audit log/)
  assert.ok(e.telemetry())
})

test('a sealed, anchored audit log catches records cut off its end', async () => {
  const { mkdtempSync, readFileSync, rmSync, writeFileSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-seal-'))
  try {
    const log = join(dir, 'audit.jsonl')
    const options = { audit: { jsonl: log }, sealKey: new Uint8Array(32).fill(7), auditAnchor: join(dir, 'audit.anchor') }
    const e = new Engine(options).register('t', tool({ execute: () => 1 }))
    await e.run(['a', 'b', 'c'].map((id) => ({ id, tool: 't' })), { caller: { principal: 'u1' } })
    assert.deepEqual(await e.verifyAudit(), { records: 3, broken: null })
    assert.throws(() => new Engine({ sealKey: 'short' }), /32 bytes/)
    // Hex digits with a two-byte character among them: refused, not a panic.
    assert.throws(() => new Engine({ sealKey: 'hex:a\u00e9b' + '6b'.repeat(32) }), /hex key/)
    // Another key does not continue this log: its records would not verify.
    assert.throws(() => new Engine({ ...options, sealKey: 'hex:' + '08'.repeat(32) }), /not sealed with this key|valid MAC/)
    // The last line deleted: the chain that is left still links, the anchor says otherwise.
    const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean)
    writeFileSync(log, lines.slice(0, 2).join('\n') + '\n')
    const report = await e.verifyAudit()
    assert.equal(report.broken.seq, 3)
    assert.match(report.broken.reason, /removed from the end/)
    assert.throws(() => new Engine(options), /removed from the end/)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('a cache and rate limits are written in camelCase like the rest of a policy', async () => {
  let runs = 0
  const e = new Engine()
    .register('look', tool({ execute: (a) => (runs++, a) }), { effect: 'read', cache: { ttlMs: 60_000, scope: 'global' } })
    .register('send', tool({ execute: () => 'sent' }), { rateLimits: [{ max: 1, perMs: 60_000 }] })
    .register('legacy', tool({ execute: () => 'ok' }), { effect: 'read', cache: { ttl_ms: 1_000 }, rate_limits: [{ max: 5, per_ms: 1_000 }] })
  const caller = { principal: 'ana' }
  await e.run([{ tool: 'look', arguments: { q: 1 } }], { caller })
  const again = await e.run([{ tool: 'look', arguments: { q: 1 } }], { caller })
  assert.equal(again.results[0].cached, true)
  assert.equal(runs, 1)
  const sent = await e.run([{ tool: 'send' }, { tool: 'send', dependsOn: ['call_0'] }], { caller })
  assert.deepEqual(sent.results.map((r) => r.envelope.ok ? 'ok' : r.envelope.error.code), ['ok', 'rate_limited'])
  const spec = e.specs().find((s) => s.name === 'send')
  assert.deepEqual(spec.policy.rateLimits, [{ max: 1, per_ms: 60_000, scope: 'principal' }], 'exported in the core\'s spelling below the policy')
  assert.equal((await e.run([{ tool: 'legacy' }], { caller })).results[0].envelope.ok, true)
})
