// The PostgreSQL state store from Node, against the real server: runs, approvals and
// idempotency shared by separate engines (workers); a database that is down refuses calls
// with the retryable `unavailable` code. Each test has its own schema, dropped after.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { test } from 'node:test'
import { Engine, ToolError, tool } from '../lib/index.mjs'

const base = process.env.TOOLJIG_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const ana = { principal: 'ana', tenant: 'acme' }

/** @param {string} sql */
function psql(sql) {
  return spawnSync('psql', [base, '-qAtc', sql], { encoding: 'utf8', timeout: 30_000 })
}

/** A URL whose `?schema=` is the test's own, or null (skipped) when the server is away outside CI. */
function scratch(t) {
  if (psql('SELECT 1').status !== 0) {
    if (process.env.CI === 'true') throw new Error(`PostgreSQL at ${base} is unreachable under CI=true`)
    t.skip(`PostgreSQL at ${base} is unreachable (or psql is missing)`)
    return null
  }
  const schema = `tj_node_${randomUUID().replaceAll('-', '')}`
  t.after(() => psql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
  return `${base}?schema=${schema}`
}

/** A worker: its own engine and pool on the shared database. */
function worker(stateStore, runs) {
  const engine = new Engine({ stateStore })
  engine.register('pay', tool({ execute: (a) => (runs.push('pay'), { paid: a.amount }) }), { idempotency: { mode: 'arguments' } })
  engine.register('transfer', tool({ execute: (a) => (runs.push('transfer'), { sent: a.to }) }), { approval: { required: 'always' } })
  return engine
}

test('workers share runs, approvals and idempotency through PostgreSQL', async (t) => {
  const url = scratch(t)
  if (!url) return
  const runs = []
  const [a, b] = [worker(url, runs), worker(url, runs)]
  const out = await a.run([{ id: 't', tool: 'transfer', arguments: { to: 'bo' } }], { caller: ana })
  const { id, argumentsHash } = out.results[0].approval
  assert.deepEqual((await b.pending()).map((p) => p.id), [id])
  await b.approve(id, { argumentsHash, approver: ana })
  const resumed = await b.resume(out.runId)
  assert.deepEqual(resumed.results[0].envelope, { ok: true, data: { sent: 'bo' } })

  const first = await a.run([{ id: 'p', tool: 'pay', arguments: { amount: 5 } }], { caller: ana })
  const again = await b.run([{ id: 'p', tool: 'pay', arguments: { amount: 5 } }], { caller: ana })
  assert.equal(again.results[0].replayed, true)
  assert.deepEqual(again.results[0].envelope, first.results[0].envelope)
  assert.deepEqual(runs, ['transfer', 'pay'])
})

test('a database that is down refuses calls retryably and runs nothing', async () => {
  const runs = []
  const engine = worker('postgres://postgres@127.0.0.1:1/test?schema=down', runs)
  const out = await engine.run([{ id: 'p', tool: 'pay', arguments: { amount: 1 } }], { caller: ana })
  const { code, retryable, reason } = out.results[0].envelope.error
  assert.deepEqual([code, retryable, reason], ['unavailable', true, 'store_unavailable'])
  assert.deepEqual(runs, [])
  await assert.rejects(engine.pending(), (e) => e instanceof ToolError && e.code === 'unavailable')
  assert.throws(() => new Engine({ stateStore: 'postgres://h/db?schema=a;drop' }), /stateStore/)
})

test('workers write one sealed audit chain in PostgreSQL', async (t) => {
  const url = scratch(t)
  if (!url) return
  const sealKey = 'hex:' + 'cd'.repeat(32)
  const workers = [0, 1, 2].map(() => new Engine({ audit: url, sealKey }))
  for (const w of workers) w.register('echo', tool({ execute: (a) => a }))
  await Promise.all(
    workers.flatMap((w, n) => [0, 1, 2, 3].map((i) => w.run([{ id: `c${i}`, tool: 'echo', arguments: { i } }], { caller: { principal: `p${n}` } }))),
  )
  const report = await workers[0].verifyAudit()
  assert.equal(report.records, 12)
  assert.ok(!report.broken, JSON.stringify(report))
  assert.deepEqual((await workers[1].audit()).map((r) => r.seq), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
  assert.equal((await workers[2].audit({ principal: 'p1' })).length, 4)
})

test('a store over TLS: verify-full against the server certificate, refused for another name', async (t) => {
  const url = scratch(t)
  if (!url) return
  const [ssl, cert] = ['SHOW ssl', 'SHOW ssl_cert_file'].map((q) => psql(q).stdout.trim())
  const { existsSync } = await import('node:fs')
  if (ssl !== 'on' || !existsSync(cert) || !url.includes('127.0.0.1')) {
    if (process.env.CI === 'true') throw new Error(`the PostgreSQL server serves no TLS (ssl = ${ssl}, ${cert}) under CI=true`)
    t.skip('the PostgreSQL server serves no TLS here')
    return
  }
  const app = `tj_node_tls_${randomUUID().replaceAll('-', '')}`
  const secure = `${url.replace('127.0.0.1', 'localhost')}&sslmode=verify-full&sslrootcert=${cert}&application_name=${app}`
  const runs = []
  const engine = worker(secure, runs)
  const out = await engine.run([{ id: 'p', tool: 'pay', arguments: { amount: 5 } }], { caller: ana })
  assert.deepEqual(out.results[0].envelope, { ok: true, data: { paid: 5 } })
  const encrypted = psql(`SELECT bool_and(s.ssl) FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = '${app}'`)
  assert.equal(encrypted.stdout.trim(), 't')
  // The certificate was issued to localhost: by address, verify-full refuses it.
  const wrong = worker(`${url}&sslmode=verify-full&sslrootcert=${cert}`, runs)
  const refused = await wrong.run([{ id: 'p', tool: 'pay', arguments: { amount: 6 } }], { caller: ana })
  assert.equal(refused.results[0].envelope.error.code, 'unavailable')
  assert.deepEqual(runs, ['pay'])
  await assert.rejects(async () => new Engine({ stateStore: `${url}&sslmode=sometimes` }), /sslmode=sometimes/)
})
