// The `tooljig` bin shipped with the package: the same command line as the Rust binary, on a
// store a Node app wrote.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Engine, tool } from '../lib/index.mjs'

const bin = fileURLToPath(new URL('../bin/tooljig.mjs', import.meta.url))

test('an operator approves from the tooljig bin what a Node app asked', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-cli-'))
  try {
    const store = `sqlite://${join(dir, 'store.db')}`
    const audit = `sqlite://${join(dir, 'audit.db')}`
    const engine = new Engine({ stateStore: store, audit })
    const sent = []
    engine.register(
      'send_email',
      tool({ inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] }, execute: ({ to }) => (sent.push(to), `sent to ${to}`) }),
      { risk: 'high', approval: { required: 'always' } },
    )
    const out = await engine.run([{ id: 'a', tool: 'send_email', arguments: { to: 'ada@example.com' } }], { caller: { principal: 'alice' } })
    const cli = (...args) => spawnSync(process.execPath, [bin, ...args], { encoding: 'utf8', env: { ...process.env, TOOLJIG_STORE: store, TOOLJIG_AUDIT: audit } })
    const pending = cli('pending', '--json')
    assert.equal(pending.status, 0, pending.stderr)
    const [request] = JSON.parse(pending.stdout)
    const refused = cli('reject', request.id, '--as', 'mallory')
    assert.equal(refused.status, 1)
    assert.match(refused.stderr, /^tooljig: error: .*not_an_approver/)
    const approved = cli('approve', request.id, '--as', 'alice', '--hash', request.arguments_hash, '--json')
    assert.equal(approved.status, 0, approved.stderr)
    assert.equal(JSON.parse(approved.stdout).status, 'approved')
    const resumed = await engine.resume(out.runId)
    assert.deepEqual(resumed.results[0].envelope, { ok: true, data: 'sent to ada@example.com' })
    assert.deepEqual(sent, ['ada@example.com'])
    const verify = cli('audit', 'verify')
    assert.equal(verify.status, 0, verify.stderr)
    assert.match(verify.stdout, /^intact:/)
    assert.equal(cli('nonsense').status, 2)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the inbox started from Node decides as the operator', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-inbox-'))
  const engine = new Engine({ stateStore: `sqlite://${join(dir, 'store.db')}` })
  engine.register('wire', tool({ inputSchema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] }, execute: ({ amount }) => `sent ${amount}` }), {
    risk: 'high',
    approval: { required: 'always' },
  })
  const out = await engine.run([{ id: 'w', tool: 'wire', arguments: { amount: 100 } }], { caller: { principal: 'alice' } })
  assert.throws(() => engine.serveInbox({ tokens: {} }), /operator tokens/)
  const server = engine.serveInbox({ tokens: { 'alice-token': { principal: 'alice' } } })
  try {
    const auth = { authorization: 'Bearer alice-token' }
    assert.equal((await fetch(server.url)).status, 401)
    const page = await (await fetch(server.url, { headers: auth })).text()
    const field = (name) => page.match(new RegExp(`name=${name} value="([^"]+)"`))[1]
    const decided = await fetch(new URL('/decide', server.url), {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ id: field('id'), hash: field('hash'), csrf: field('csrf'), decision: 'approve' }),
      redirect: 'manual',
    })
    assert.equal(decided.status, 303)
    const resumed = await engine.resume(out.runId)
    assert.deepEqual(resumed.results[0].envelope, { ok: true, data: 'sent 100' })
  } finally {
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the inbox asks the app’s async auth hook who calls', async () => {
  const engine = new Engine()
  const seen = []
  const server = engine.serveInbox({
    auth: async (request) => {
      seen.push(request.path)
      const who = request.headers['x-operator']
      if (who === undefined || who === 'mallory') throw new Error('not an operator')
      return { principal: who }
    },
  })
  try {
    const grace = await fetch(server.url, { headers: { 'x-operator': 'grace' } })
    assert.equal(grace.status, 200)
    assert.match(await grace.text(), /Signed in as <b>grace<\/b>/)
    const mallory = await fetch(server.url, { headers: { 'x-operator': 'mallory' } })
    assert.equal(mallory.status, 401)
    assert.match(await mallory.text(), /not an operator/)
    assert.deepEqual(seen, ['/', '/'])
    assert.throws(() => engine.serveInbox({ auth: 'nope' }), /must be a function/)
  } finally {
    await server.stop()
  }
})

test("a run is resumed and rolled back from the inbox by the app's Node worker", async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-inbox-operate-'))
  const engine = new Engine({ stateStore: `sqlite://${join(dir, 'store.db')}` })
  const moved = []
  engine.register(
    'transfer',
    tool({ inputSchema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] }, execute: async ({ amount }) => (moved.push(amount), `t-${amount}`) }),
    { risk: 'high', approval: { required: 'always' } },
  )
  engine.compensateWith('transfer', async ({ result }) => `reversed ${result}`)
  const out = await engine.run([{ id: 't', tool: 'transfer', arguments: { amount: 7 } }], { caller: { principal: 'ada' } })
  const [pending] = await engine.pendingApprovals()
  await engine.approve(pending.id, { argumentsHash: pending.argumentsHash, approver: { principal: 'ada' } })
  const server = engine.serveInbox({ tokens: { 'ada-token': { principal: 'ada' } } })
  const stop = new AbortController()
  const worker = engine.serveOperatorRequests({ worker: 'node-worker', signal: stop.signal })
  try {
    const auth = { authorization: 'Bearer ada-token' }
    const page = await (await fetch(new URL(`/runs/${out.runId}`, server.url), { headers: auth })).text()
    assert.match(page, /id="operate"/)
    const csrf = page.match(/name=csrf value="([^"]+)"/)[1]
    const operate = (fields) =>
      fetch(new URL(`/runs/${out.runId}/operate`, server.url), {
        method: 'POST',
        headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(fields),
      }).then(async (r) => [r.status, await r.text()])
    const [status, resumed] = await operate({ csrf, action: 'resume' })
    assert.equal(status, 200, resumed)
    assert.match(resumed, /resumed by worker <b>node-worker<\/b>/)
    assert.deepEqual(moved, [7])
    const [rolledStatus, rolled] = await operate({ csrf, action: 'rollback' })
    assert.equal(rolledStatus, 200, rolled)
    assert.match(rolled, /<td>compensated/)
    assert.equal((await operate({ csrf: 'forged', action: 'rollback' }))[0], 403)
  } finally {
    stop.abort()
    await worker
    await server.stop()
    rmSync(dir, { recursive: true, force: true })
  }
})

test('the tooljig bin resumes and rolls back through a Node worker', async () => {
  const { execFile } = await import('node:child_process')
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-operator-'))
  const stop = new AbortController()
  try {
    const store = `sqlite://${join(dir, 'store.db')}`
    const engine = new Engine({ stateStore: store })
    const moved = []
    const undone = []
    engine.register(
      'transfer',
      tool({ inputSchema: { type: 'object', properties: { amount: { type: 'integer' } }, required: ['amount'] }, execute: async ({ amount }) => (moved.push(amount), { transfer: `t-${amount}` }) }),
      { risk: 'high', approval: { required: 'always' } },
    )
    engine.compensateWith('transfer', async ({ result }) => (undone.push(result), { reversed: true }))
    const out = await engine.run([{ id: 't', tool: 'transfer', arguments: { amount: 40 } }], { caller: { principal: 'ada' } })
    const [pending] = await engine.pendingApprovals()
    await engine.approve(pending.id, { argumentsHash: pending.argumentsHash, approver: { principal: 'ada' } })
    // Not spawnSync: this process's loop must keep serving the worker while the command waits.
    const cli = (...args) =>
      new Promise((resolve) => {
        execFile(process.execPath, [bin, ...args], { env: { ...process.env, TOOLJIG_STORE: store } }, (error, stdout, stderr) => resolve({ status: error ? error.code : 0, stdout, stderr }))
      })

    // Nobody serves operator requests yet: the command gives up and the request is withdrawn.
    const alone = await cli('resume', out.runId, '--wait-ms', '300')
    assert.equal(alone.status, 1)
    assert.match(alone.stderr, /no app worker took request/)
    const asked = await engine.askOperator('resume', out.runId, { askedBy: 'olga' })
    assert.equal(asked.state, 'queued')
    assert.equal(asked.askedBy, 'olga')
    assert.equal((await engine.waitOperatorRequest(asked.id, { timeoutMs: 200 })).state, 'queued')
    assert.equal(await engine.operatorRequest(asked.id), null)
    await assert.rejects(engine.askOperator('resume', 'no-such-run'), (e) => e.code === 'not_found')
    assert.deepEqual(moved, [])

    const worker = engine.serveOperatorRequests({ worker: 'node-worker', signal: stop.signal })
    const resumed = await cli('resume', out.runId, '--as', 'olga', '--json')
    assert.equal(resumed.status, 0, resumed.stderr)
    const answer = JSON.parse(resumed.stdout)
    assert.equal(answer.state, 'answered')
    assert.equal(answer.worker, 'node-worker')
    assert.deepEqual(answer.result.results[0].envelope, { ok: true, data: { transfer: 't-40' } })
    assert.deepEqual(moved, [40])
    const rolled = await cli('rollback', out.runId)
    assert.equal(rolled.status, 0, rolled.stderr)
    assert.match(rolled.stdout, /rolled back by worker node-worker/)
    assert.match(rolled.stdout, /compensated/)
    assert.deepEqual(undone, [{ transfer: 't-40' }])
    // The answer as the worker's engine reads it: camelCase keys, the report shaped.
    const again = await engine.askOperator('rollback', out.runId)
    const report = await engine.waitOperatorRequest(again.id, { timeoutMs: 10_000 })
    assert.equal(report.result.runId, out.runId)
    assert.equal(report.result.entries[0].outcome, 'already_rolled_back')
    stop.abort()
    await worker
  } finally {
    stop.abort()
    rmSync(dir, { recursive: true, force: true })
  }
})
