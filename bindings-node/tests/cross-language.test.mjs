// A run suspended by a Python process is resumed by this Node process: the state store is
// the core's, so a run, its approvals and its results read the same in every language. On
// PostgreSQL, the same with a third language: suspended in Python, approved in Node, resumed in
// Rust, every effect once, one sealed audit chain written by all three.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { Engine, tool } from '../lib/index.mjs'

const repo = join(dirname(fileURLToPath(import.meta.url)), '..', '..')
const python = join(repo, '.venv', 'bin', 'python')
const hasPython = existsSync(python) && spawnSync(python, ['-c', 'import tooljig']).status === 0
if (!hasPython && process.env.CI === 'true') {
  throw new Error(`the Python package is not installed in ${python}: run bindings-python/run-tests.sh first`)
}

const SUSPEND = `
import json, sys, tooljig
engine = tooljig.Engine(state_store=tooljig.SqliteStore(sys.argv[1]), approval_rules={"min_risk": "high"})
engine.register("transfer", "Moves money.", {"type": "object", "properties": {"amount": {"type": "integer"}}},
                lambda args: {"moved": args["amount"], "by": "python"}, risk="high")
out = engine.run_sync([{"id": "t", "tool": "transfer", "arguments": {"amount": 5}}], caller={"principal": "alice"})
print(json.dumps({"run_id": out.run_id, "approval": out.get("t")["approval"]}))
`

test('a run suspended in Python is approved and resumed in Node', { skip: hasPython ? false : 'the Python package is not built here (bindings-python/run-tests.sh builds it)' }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-cross-'))
  try {
    const store = join(dir, 'runs.db')
    const py = spawnSync(python, ['-c', SUSPEND, store], { encoding: 'utf8' })
    assert.equal(py.status, 0, py.stderr)
    const { run_id: runId, approval } = JSON.parse(py.stdout)
    const e = new Engine({ stateStore: { sqlite: store }, approvalRules: { minRisk: 'high' } }).register(
      'transfer',
      tool({ description: 'Moves money.', inputSchema: { type: 'object', properties: { amount: { type: 'integer' } } }, execute: (a) => ({ moved: a.amount, by: 'node' }) }),
      { risk: 'high' },
    )
    assert.deepEqual((await e.pending()).map((p) => p.id), [approval.id])
    await e.approve(approval.id, { argumentsHash: approval.arguments_hash, approver: { principal: 'alice' } })
    const done = await e.resume(runId)
    assert.deepEqual(done.results[0].envelope, { ok: true, data: { moved: 5, by: 'node' } })
    assert.equal((await e.runRecord(runId)).state, 'finished')
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
})

const postgres = process.env.TOOLJIG_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
const psql = (sql) => spawnSync('psql', [postgres, '-qAtc', sql], { encoding: 'utf8', timeout: 30_000 })
const hasPostgres = psql('SELECT 1').status === 0
if (!hasPostgres && process.env.CI === 'true') throw new Error(`PostgreSQL at ${postgres} is unreachable under CI=true`)
const sealKey = 'hex:' + '5e'.repeat(32)

const SUSPEND_PG = `
import json, sys, tooljig
engine = tooljig.Engine(state_store=sys.argv[1], audit=sys.argv[1], seal_key="${sealKey}", approval_rules={"min_risk": "high"})
engine.register("transfer", "Moves money.", {"type": "object", "properties": {"amount": {"type": "integer"}}},
                lambda args: {"moved": args["amount"], "by": "python"}, risk="high")
out = engine.run_sync([{"id": "t", "tool": "transfer", "arguments": {"amount": 5}}], caller={"principal": "alice"})
print(json.dumps({"run_id": out.run_id, "approval": out.get("t")["approval"]}))
`

/// The Rust worker of this test, built (or found fresh) by cargo.
function transferWorker() {
  const built = spawnSync('cargo', ['build', '-q', '-p', 'tooljig', '--all-features', '--example', 'transfer_worker'], { cwd: repo, encoding: 'utf8' })
  assert.equal(built.status, 0, built.stderr)
  const dirs = [join(repo, 'target', 'debug'), ...(process.env.CARGO_BUILD_TARGET ? [join(repo, 'target', process.env.CARGO_BUILD_TARGET, 'debug')] : [])]
  const found = dirs.map((d) => join(d, 'examples', 'transfer_worker')).filter(existsSync)
  assert.ok(found.length > 0, 'cargo built the transfer worker')
  return found.sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs)[0]
}

test('on PostgreSQL: suspended in Python, approved in Node, resumed in Rust, once, one sealed chain', {
  skip: !hasPython ? 'the Python package is not built here' : hasPostgres ? false : `PostgreSQL at ${postgres} is unreachable`,
  timeout: 600_000,
}, async (t) => {
  const schema = `tj_node_cross_${process.pid}_${Date.now()}`
  t.after(() => psql(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`))
  const url = `${postgres}?schema=${schema}`
  const py = spawnSync(python, ['-c', SUSPEND_PG, url], { encoding: 'utf8' })
  assert.equal(py.status, 0, py.stderr)
  const { run_id: runId, approval } = JSON.parse(py.stdout)

  const node = new Engine({ stateStore: url, audit: url, sealKey, approvalRules: { minRisk: 'high' } }).register(
    'transfer',
    tool({ description: 'Moves money.', inputSchema: { type: 'object', properties: { amount: { type: 'integer' } } }, execute: (a) => ({ moved: a.amount, by: 'node' }) }),
    { risk: 'high' },
  )
  assert.deepEqual((await node.pending()).map((p) => p.id), [approval.id])
  await node.approve(approval.id, { argumentsHash: approval.arguments_hash, approver: { principal: 'alice' } })

  const rust = spawnSync(transferWorker(), ['resume', url, runId], { encoding: 'utf8', env: { ...process.env, TOOLJIG_SEAL_KEY: sealKey } })
  assert.equal(rust.status, 0, rust.stderr)
  assert.deepEqual(JSON.parse(rust.stdout), [{ call: 't', envelope: { ok: true, data: { moved: 5, by: 'rust' } } }])

  // Resumed again here: finished, nothing runs twice.
  const again = await node.resume(runId)
  assert.deepEqual(again.results[0].envelope, { ok: true, data: { moved: 5, by: 'rust' } })
  const report = await node.verifyAudit()
  assert.ok(!report.broken, JSON.stringify(report))
  const records = await node.audit()
  assert.deepEqual(records.map((r) => r.outcome), ['pending_approval', 'ok'], JSON.stringify(records))
})
