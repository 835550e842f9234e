// examples/node/quickstart.mjs does what the Rust quick start does.
import assert from 'node:assert/strict'
import { spawnSync } from 'node:child_process'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'

const example = fileURLToPath(new URL('../../examples/node/quickstart.mjs', import.meta.url))

test('the quick start prints parallel, dependent, repaired, needs and failing envelopes', () => {
  const r = spawnSync(process.execPath, [example], { encoding: 'utf8', timeout: 20_000 })
  assert.equal(r.status, 0, r.stderr)
  const line = (id) => r.stdout.split('\n').find((l) => l.startsWith(id + ' '))
  assert.match(line('w1'), /\{"ok":true,"data":\{"city":"Lisbon","temperature_c":21\}\}.*repaired=true/)
  assert.match(line('w2'), /\{"ok":true,"data":\{"city":"Oslo","temperature_c":4\.5\}\}/)
  assert.match(line('p1'), /\{"ok":true,"data":\{"city":"Lisbon","date":"2026-11-28","idea":"a picnic"\}\}/)
  assert.match(line('p2'), /\{"ok":false,"needs":\{"date":true\}\}/)
  assert.match(line('b1'), /"code":"external_api_error".*attempts=2/)
  assert.match(r.stdout, /batch took \d+ ms/)
})
