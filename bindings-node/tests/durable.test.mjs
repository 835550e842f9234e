// Durable runs through Node (docs/durable-runs.md): approvals decided by people, the approval
// predicate as a JS function, client-side results, resume from a SQLite store by a second
// Engine, learned preferences, and rollback with JS compensations.
import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { Engine, ToolError, tool } from '../lib/index.mjs'
import { byId } from './support.mjs'

const mail = {
  type: 'object',
  properties: { to: { type: 'string' }, body: { type: 'string' } },
  required: ['to'],
  additionalProperties: false,
}

const alice = { principal: 'alice', tenant: 'acme' }

/** An engine whose `send_email` is high risk (so it needs approval) and counts what it sent. */
function mailer(options = {}) {
  const sent = []
  const engine = new Engine({ approvalRules: { minRisk: 'high' }, ...options })
  engine.register('send_email', tool({ inputSchema: mail, execute: (a) => (sent.push(a), { sent: a.to }) }), { risk: 'high' })
  return { engine, sent }
}

/** Asserts that `promise` rejects with a ToolError of this code and `reason` detail. */
async function refused(promise, code, reason) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof ToolError, `expected a ToolError, got ${e}`)
    assert.equal(e.code, code)
    assert.equal(e.details?.reason, reason)
    return true
  })
}

test('a high-risk call waits for approval; approving runs exactly the asked arguments once', async () => {
  const { engine, sent } = mailer()
  const out = await engine.run(
    [
      { id: 'mail', tool: 'send_email', arguments: { to: 'bob@x.io' } },
      { id: 'after', tool: 'send_email', arguments: { to: 'carol@x.io' }, dependsOn: ['mail'] },
    ],
    { caller: alice },
  )
  const pending = byId(out, 'mail')
  assert.equal(pending.status, 'pending_approval')
  assert.equal(pending.envelope.error.code, 'pending_approval')
  assert.equal(pending.approval.status, 'pending')
  assert.equal(pending.approval.requestedBy, 'alice')
  assert.match(pending.approval.argumentsHash, /^[0-9a-f]{64}$/)
  assert.equal(pending.envelope.error.approval_id, pending.approval.id, 'the envelope keeps core keys')
  assert.equal(byId(out, 'after').status, 'waiting')
  assert.equal(typeof out.runId, 'string')
  assert.deepEqual(sent, [])

  const inbox = await engine.pendingApprovals('acme')
  assert.deepEqual(inbox.map((r) => [r.id, r.tool, r.callId, r.requestedBy.principal]), [[pending.approval.id, 'send_email', 'mail', 'alice']])
  assert.deepEqual(await engine.pendingApprovals('other'), [])

  const record = await engine.decide(pending.approval.id, { decision: 'approve', argumentsHash: pending.approval.argumentsHash }, alice)
  assert.equal(record.status, 'approved')
  assert.equal(record.decision.by, 'alice')
  assert.equal((await engine.approval(pending.approval.id)).status, 'approved')

  const resumed = await engine.resume(out.runId)
  assert.deepEqual(byId(resumed, 'mail').envelope, { ok: true, data: { sent: 'bob@x.io' } })
  assert.equal(byId(resumed, 'mail').approval.decidedBy, 'alice')
  // The dependent is high risk too: it now asks for its own approval.
  assert.equal(byId(resumed, 'after').status, 'pending_approval')
  assert.deepEqual(sent, [{ to: 'bob@x.io' }])

  const run = await engine.runRecord(out.runId)
  assert.equal(run.state, 'suspended')
  assert.equal(run.passes, 2)
  assert.ok(run.steps.some((s) => s.what === 'resumed'))
  assert.equal(await engine.runRecord('run_unknown'), null)
})

test('a rejection reaches the model with its message; an edit runs exactly the edited arguments', async () => {
  const { engine, sent } = mailer()
  const out = await engine.run(
    [
      { id: 'no', tool: 'send_email', arguments: { to: 'bob@x.io' } },
      { id: 'edit', tool: 'send_email', arguments: { to: 'bob@x.io', body: 'hi' } },
    ],
    { caller: alice },
  )
  const [no, edit] = [byId(out, 'no').approval, byId(out, 'edit').approval]
  await engine.decide(no.id, { decision: 'reject', argumentsHash: no.argumentsHash, message: 'we never email Bob' }, alice)
  await refused(
    engine.decide(edit.id, { decision: 'edit', argumentsHash: edit.argumentsHash, arguments: { to: 'carol@x.io', cc: 'x' } }, alice),
    'invalid_arguments',
    'invalid_edit',
  )
  await engine.decide(edit.id, { decision: 'edit', argumentsHash: edit.argumentsHash, arguments: { to: 'carol@x.io', body: 'hello' } }, alice)

  const resumed = await engine.resume(out.runId)
  const rejected = byId(resumed, 'no')
  assert.equal(rejected.envelope.error.code, 'approval_rejected')
  assert.match(rejected.envelope.error.message, /we never email Bob/)
  assert.equal(rejected.approval.status, 'rejected')
  assert.equal(byId(resumed, 'edit').approval.status, 'edited')
  assert.deepEqual(byId(resumed, 'edit').envelope, { ok: true, data: { sent: 'carol@x.io' } })
  assert.deepEqual(sent, [{ to: 'carol@x.io', body: 'hello' }])
})

test('forged, stale, replayed and unauthorised decisions are refused as ToolErrors with a reason', async () => {
  const { engine, sent } = mailer()
  engine.register('wire', tool({ inputSchema: { type: 'object' }, execute: () => 'wired' }), { risk: 'high', approval: { approverRoles: ['reviewer'] } })
  const out = await engine.run([{ id: 'w', tool: 'wire', arguments: { amount: 5 } }], { caller: alice })
  const { id, argumentsHash } = byId(out, 'w').approval
  const rita = { principal: 'rita', tenant: 'acme', roles: ['reviewer'] }
  await refused(engine.decide('apr_forged', { decision: 'approve', argumentsHash }, rita), 'not_found', 'unknown_approval')
  await refused(engine.decide(id, { decision: 'approve', argumentsHash: '0'.repeat(64) }, rita), 'conflict', 'arguments_mismatch')
  await refused(engine.decide(id, { decision: 'approve', argumentsHash }, alice), 'permission_denied', 'not_an_approver')
  await refused(engine.decide(id, { decision: 'approve', argumentsHash }, { ...rita, tenant: 'other' }), 'permission_denied', 'not_an_approver')
  await engine.decide(id, { decision: 'approve', argumentsHash }, rita)
  await refused(engine.decide(id, { decision: 'reject', argumentsHash }, rita), 'conflict', 'already_decided')
  await assert.rejects(engine.decide(id, { decision: 'maybe', argumentsHash }, rita), /decision/, 'a malformed decision is a plain argument error')
  assert.deepEqual(byId(await engine.resume(out.runId), 'w').envelope, { ok: true, data: 'wired' })
  assert.deepEqual(sent, [])
})

test('the approval predicate is a JS function, sync or async, and fails closed when it throws', async () => {
  const seen = []
  for (const predicate of [
    (q) => (seen.push(q), q.arguments.amount >= 500),
    async (q) => q.arguments.amount >= 500,
  ]) {
    const engine = new Engine({ approvalPredicate: predicate })
    engine.register('refund', tool({ inputSchema: { type: 'object' }, execute: (a) => a }))
    const out = await engine.run(
      [
        { id: 'small', tool: 'refund', arguments: { amount: 20 } },
        { id: 'big', tool: 'refund', arguments: { amount: 500 } },
      ],
      { caller: alice },
    )
    assert.deepEqual(out.results.map((r) => r.status), ['done', 'pending_approval'])
  }
  assert.deepEqual([seen[0].caller.principal, seen[0].caller.tenant], ['alice', 'acme'])
  assert.equal(seen[0].tool, 'refund')
  assert.equal(seen[0].risk, 'low')

  for (const predicate of [() => { throw new Error('rules offline') }, () => 'yes']) {
    const engine = new Engine({ approvalPredicate: predicate })
    engine.register('refund', tool({ inputSchema: { type: 'object' }, execute: (a) => a }))
    const out = await engine.run([{ tool: 'refund', arguments: { amount: 1 } }], { caller: alice })
    assert.equal(out.results[0].status, 'pending_approval')
  }
  assert.throws(() => new Engine({ approvalPredicate: true }), TypeError)
})

test('a client-side tool ends pending; submitResult completes it and resume hands the model the result', async () => {
  const engine = new Engine()
  engine.registerSpec({ name: 'pick_file', inputSchema: { type: 'object' }, outputSchema: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] } })
  engine.registerSpec({ name: 'confirm', inputSchema: { type: 'object' } })
  const out = await engine.run(
    [
      { id: 'pick', tool: 'pick_file', arguments: { filter: '*.pdf' } },
      { id: 'ok', tool: 'confirm', arguments: {} },
    ],
    { caller: alice },
  )
  assert.deepEqual(out.results.map((r) => r.status), ['pending_external', 'pending_external'])
  const pending = await engine.pendingExternal(out.runId)
  assert.deepEqual(pending.map((c) => [c.callId, c.tool, c.arguments]).sort(), [['ok', 'confirm', {}], ['pick', 'pick_file', { filter: '*.pdf' }]])

  await refused(engine.submitResult(out.runId, 'pick', { name: 'no path' }, alice), 'invalid_output', 'invalid_result')
  // Holding the run and call ids is not enough: only the caller the run was started for submits.
  await refused(engine.submitResult(out.runId, 'pick', { path: '/x.pdf' }, { principal: 'mallory', tenant: 'acme' }), 'permission_denied', 'not_the_caller')
  await refused(engine.submitResult(out.runId, 'pick', { path: '/x.pdf' }), 'permission_denied', 'not_the_caller')
  assert.deepEqual(await engine.submitResult(out.runId, 'pick', { path: '/a.pdf' }, alice), { ok: true, data: { path: '/a.pdf' } })
  await refused(engine.submitResult(out.runId, 'pick', { path: '/b.pdf' }, alice), 'conflict', 'duplicate')
  await refused(engine.submitResult(out.runId, 'nope', {}, alice), 'not_found', 'unknown_call')
  const declined = await engine.submitResult(out.runId, 'ok', new ToolError('permission_denied', 'the user declined', { details: { by: 'user' } }), alice)
  assert.equal(declined.error.code, 'permission_denied')

  const resumed = await engine.resume(out.runId)
  assert.deepEqual(byId(resumed, 'pick').envelope, { ok: true, data: { path: '/a.pdf' } })
  assert.deepEqual(byId(resumed, 'ok').envelope.error, { code: 'permission_denied', message: 'the user declined', retryable: false, by: 'user' })
  assert.deepEqual(await engine.pendingExternal(out.runId), [])
})

test('a new Engine over the same SQLite file decides and resumes the run another one started', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-durable-'))
  try {
    const stateStore = { sqlite: join(dir, 'state.db') }
    const first = mailer({ stateStore })
    const out = await first.engine.run([{ id: 'mail', tool: 'send_email', arguments: { to: 'bob@x.io' } }], { caller: alice })
    assert.equal(out.results[0].status, 'pending_approval')
    const { id, argumentsHash } = out.results[0].approval

    const second = mailer({ stateStore })
    assert.equal((await second.engine.approval(id)).status, 'pending')
    assert.equal((await second.engine.runRecord(out.runId)).state, 'suspended')
    await second.engine.decide(id, { decision: 'approve', argumentsHash }, alice)
    const resumed = await second.engine.resume(out.runId)
    assert.deepEqual(resumed.results[0].envelope, { ok: true, data: { sent: 'bob@x.io' } })
    assert.deepEqual(first.sent, [])
    assert.deepEqual(second.sent, [{ to: 'bob@x.io' }])

    // Finished: resuming again, from either engine, returns the results and runs nothing.
    const again = await first.engine.resume(out.runId)
    assert.deepEqual(again.results[0].envelope, { ok: true, data: { sent: 'bob@x.io' } })
    assert.equal((await first.engine.runRecord(out.runId)).state, 'finished')
    assert.deepEqual(first.sent.length + second.sent.length, 1)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  assert.throws(() => new Engine({ stateStore: 'disk' }), /stateStore/)
  assert.throws(() => new Engine({ stateStore: { sqlite: join(dir, 'missing', 'dir', 'x.db') } }), /stateStore/)
})

test('learned preferences: remember on approval, allowAlways, list and revoke', async () => {
  const { engine, sent } = mailer()
  const out = await engine.run([{ id: 'm', tool: 'send_email', arguments: { to: 'bob@x.io', body: '1' } }], { caller: alice })
  const { id, argumentsHash } = out.results[0].approval
  await engine.decide(id, { decision: 'approve', argumentsHash, remember: { scope: ['to'] } }, alice)
  await engine.resume(out.runId)
  const again = await engine.run([{ id: 'm2', tool: 'send_email', arguments: { to: 'bob@x.io', body: '2' } }], { caller: alice })
  assert.equal(again.results[0].status, 'done')
  assert.equal(again.results[0].approval.status, 'approved')
  assert.match(again.results[0].approval.preferenceId, /./)
  const other = await engine.run([{ tool: 'send_email', arguments: { to: 'eve@x.io' } }], { caller: alice })
  assert.equal(other.results[0].status, 'pending_approval', 'the preference covers its scope only')

  const pref = await engine.allowAlways(alice, 'send_email', { to: 'eve@x.io' })
  assert.deepEqual(pref.values, { to: 'eve@x.io' })
  assert.equal(pref.principal, 'alice')
  const prefs = await engine.preferences(alice)
  assert.equal(prefs.length, 2)
  assert.equal((await engine.run([{ tool: 'send_email', arguments: { to: 'eve@x.io' } }], { caller: alice })).results[0].status, 'done')
  assert.equal(await engine.revokePreference(alice, pref.id), true)
  assert.equal(await engine.revokePreference(alice, pref.id), false)
  assert.equal((await engine.run([{ tool: 'send_email', arguments: { to: 'eve@x.io' } }], { caller: alice })).results[0].status, 'pending_approval')
  await refused(engine.allowAlways({ tenant: 'acme' }, 'send_email'), 'permission_denied', undefined)
  assert.equal(sent.length, 3)
})

test('rollback runs the JS compensations latest first, each once; atomic batches roll back on failure', async () => {
  const undone = []
  const engine = new Engine({ audit: 'memory' })
  const echo = (a) => a
  engine.register('book', tool({ inputSchema: { type: 'object' }, execute: echo }), { compensation: 'cancel_booking' })
  engine.register('cancel_booking', tool({ inputSchema: { type: 'object' }, execute: (a) => (undone.push(['cancel_booking', a]), 'cancelled') }))
  engine.register('charge', tool({ inputSchema: { type: 'object' }, execute: echo }))
  engine.register('email', tool({ inputSchema: { type: 'object' }, execute: echo }))
  engine.compensateWith('charge', async (input, ctx) => {
    undone.push(['refund', input, ctx.tool])
    return 'refunded'
  })
  assert.throws(() => engine.compensateWith('email', 'not a function'), TypeError)

  const calls = [
    { id: 'b', tool: 'book', arguments: { room: 3 } },
    { id: 'c', tool: 'charge', arguments: { amount: 40 }, dependsOn: ['b'] },
    { id: 'e', tool: 'email', arguments: {}, dependsOn: ['c'] },
  ]
  const out = await engine.run(calls, { caller: alice })
  assert.ok(out.results.every((r) => r.status === 'done'))
  const report = await engine.rollback(out.runId)
  assert.equal(report.runId, out.runId)
  assert.deepEqual(
    report.entries.map((e) => [e.callId, e.outcome, e.compensation ?? null]),
    [
      ['e', 'not_reversible', null],
      ['c', 'compensated', 'handler'],
      ['b', 'compensated', 'cancel_booking'],
    ],
  )
  assert.deepEqual(undone, [
    ['refund', { arguments: { amount: 40 }, result: { amount: 40 } }, 'charge'],
    ['cancel_booking', { arguments: { room: 3 }, result: { room: 3 } }],
  ])
  // The audit log says what the rollback undid and what stays, after the calls' own records.
  const audited = (await engine.audit({ principal: alice.principal })).map((r) => [r.callId, r.outcome])
  assert.deepEqual(audited.slice(-3), [['e', 'not_reversible'], ['c', 'rolled_back'], ['b', 'rolled_back']])
  const twice = await engine.rollback(out.runId, 'c')
  assert.deepEqual(twice.entries.map((e) => [e.callId, e.outcome]), [['c', 'already_rolled_back']])
  assert.equal(undone.length, 2)
  await refused(engine.rollback('run_nope'), 'not_found', 'unknown_run')

  engine.register('fail', tool({ inputSchema: { type: 'object' }, execute: () => { throw new ToolError('conflict', 'the slot was taken') } }))
  const atomic = await engine.run(
    [
      { id: 'b', tool: 'book', arguments: { room: 4 } },
      { id: 'f', tool: 'fail', arguments: {}, dependsOn: ['b'] },
      { id: 'e', tool: 'email', arguments: {}, dependsOn: ['f'], runIfDependencyFailed: true },
    ],
    { caller: alice, atomic: true },
  )
  assert.equal(byId(atomic, 'e').envelope.error.code, 'cancelled')
  assert.deepEqual(atomic.rollback.entries.map((e) => [e.callId, e.outcome]), [['b', 'compensated']])
  assert.deepEqual(undone.at(-1), ['cancel_booking', { arguments: { room: 4 }, result: { room: 4 } }])
})

test('rollback has nothing to undo for a read-only call', async () => {
  const engine = new Engine()
  engine.register('lookup', tool({ inputSchema: { type: 'object' }, execute: () => ({ free: true }) }), { effect: 'read' })
  engine.register('book', tool({ inputSchema: { type: 'object' }, execute: () => ({ booking: 'b-1' }) }), { compensation: 'unbook' })
  engine.register('unbook', tool({ inputSchema: { type: 'object' }, execute: () => null }))
  const out = await engine.run([{ id: 'l', tool: 'lookup', arguments: {} }, { id: 'b', tool: 'book', arguments: {}, dependsOn: ['l'] }], { caller: alice })
  const report = await engine.rollback(out.runId)
  assert.deepEqual(report.entries.map((e) => [e.callId, e.outcome]), [['b', 'compensated'], ['l', 'nothing_to_undo']])
  assert.doesNotMatch(report.entries[1].message, /cannot be undone/)
})

test('approve, reject, edit and pending mirror the other languages', async () => {
  const { engine, sent } = mailer()
  const out = await engine.run(['a', 'r', 'e'].map((id) => ({ id, tool: 'send_email', arguments: { to: `${id}@x.io` } })), { caller: alice })
  assert.equal((await engine.pending('acme')).length, 3)
  const info = (id) => byId(out, id).approval
  await engine.approve(info('a').id, { argumentsHash: info('a').argumentsHash, approver: alice })
  const rejected = await engine.reject(info('r').id, { argumentsHash: info('r').argumentsHash, approver: alice, message: 'no' })
  assert.equal(rejected.status, 'rejected')
  await engine.edit(info('e').id, { to: 'carol@x.io', body: 'edited' }, { argumentsHash: info('e').argumentsHash, approver: alice })
  assert.deepEqual(await engine.pending('acme'), [])
  const done = await engine.resume(out.runId)
  assert.ok(byId(done, 'a').envelope.ok && byId(done, 'e').envelope.ok)
  assert.equal(byId(done, 'r').envelope.error.code, 'approval_rejected')
  assert.deepEqual([...sent].sort((x, y) => x.to.localeCompare(y.to)), [{ to: 'a@x.io' }, { to: 'carol@x.io', body: 'edited' }])
})

test('an edit passes every guard again: over the policy hook it is refused, a hidden argument cannot be edited', async () => {
  const ran = []
  const engine = new Engine({
    approvalRules: { minRisk: 'high' },
    policyHook: (req) => (req.arguments.amount <= 500 ? true : { allow: false, reason: `${req.arguments.amount} is over the limit` }),
  })
  const transfer = {
    type: 'object',
    properties: { amount: { type: 'integer' }, account: { type: 'string' } },
    required: ['amount', 'account'],
    additionalProperties: false,
  }
  engine.register('transfer', tool({ inputSchema: transfer, execute: (a) => (ran.push(a), a) }), {
    risk: 'high',
    hidden: { account: { from: 'principal' } },
  })
  const ask = async () => {
    const out = await engine.run([{ id: 't', tool: 'transfer', arguments: { amount: 100 } }], { caller: alice })
    return { runId: out.runId, info: byId(out, 't').approval }
  }
  const first = await ask()
  await refused(
    engine.edit(first.info.id, { amount: 100, account: 'mallory' }, { argumentsHash: first.info.argumentsHash, approver: alice }),
    'invalid_arguments',
    'hidden_argument',
  )
  await engine.edit(first.info.id, { amount: 100000, account: 'alice' }, { argumentsHash: first.info.argumentsHash, approver: alice })
  const refusedRun = byId(await engine.resume(first.runId), 't')
  assert.equal(refusedRun.envelope.error.code, 'permission_denied')
  assert.match(refusedRun.envelope.error.message, /over the limit/)
  assert.deepEqual(ran, [])

  const second = await ask()
  await engine.edit(second.info.id, { amount: 400, account: 'alice' }, { argumentsHash: second.info.argumentsHash, approver: alice })
  assert.deepEqual(byId(await engine.resume(second.runId), 't').envelope, { ok: true, data: { amount: 400, account: 'alice' } })
  assert.deepEqual(ran, [{ amount: 400, account: 'alice' }])
})

test('concurrency bounds the handlers while calls wait for the store together (docs/deployment.md)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-places-'))
  try {
    const engine = new Engine({ stateStore: `sqlite://${join(dir, 'state.db')}` })
    let running = 0
    let most = 0
    const ran = []
    engine.register(
      'pay',
      tool({
        execute: async (a) => {
          most = Math.max(most, ++running)
          await new Promise((r) => setTimeout(r, 2))
          running--
          ran.push(a.n)
          return { paid: a.n }
        },
      }),
      { idempotency: { mode: 'arguments' } },
    )
    const calls = Array.from({ length: 60 }, (_, n) => ({ id: `c${n}`, tool: 'pay', arguments: { n } }))
    const out = await engine.run(calls, { caller: alice, concurrency: 3 })
    assert.deepEqual(
      out.results.map((r) => r.envelope),
      calls.map((_, n) => ({ ok: true, data: { paid: n } })),
    )
    assert.ok(most >= 1 && most <= 3, `${most} handlers at once`)
    assert.deepEqual([...ran].sort((a, b) => a - b), calls.map((_, n) => n))
    const again = await engine.run(calls, { caller: alice, concurrency: 3 })
    assert.ok(again.results.every((r) => r.replayed))
    assert.equal(ran.length, 60)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('resume takes the BatchResult that suspended: no runId to narrow', async () => {
  const engine = new Engine()
  engine.registerSpec({ name: 'send', inputSchema: mail, policy: { approval: { required: 'always' } } }, ({ to }) => ({ sent: to }))
  engine.registerSpec({ name: 'echo', inputSchema: { type: 'object' } }, () => 'hi')
  const out = await engine.run([{ id: 's', tool: 'send', arguments: { to: 'bo' } }], { caller: alice })
  const { approval } = out.results[0]
  await engine.approve(approval.id, { argumentsHash: approval.argumentsHash, approver: alice })
  assert.deepEqual((await engine.resume(out)).results[0].envelope, { ok: true, data: { sent: 'bo' } })
  const plain = await engine.run([{ id: 'e', tool: 'echo', arguments: {} }])
  assert.equal(plain.runId, undefined)
  await assert.rejects(engine.resume(plain), { name: 'TypeError', message: /not a run/ })
})
