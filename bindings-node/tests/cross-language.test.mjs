// A run suspended by a Python process is resumed by this Node process: the state store is
// the core's, so a run, its approvals and its results read the same in every language.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
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
