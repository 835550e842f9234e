// JS heap allocated per call by tooljig's Node package, beside Promise.all + ajv: V8 allocates
// by bumping a pointer in the young generation, so with garbage collection held off (a large
// young generation, checked with a `gc` observer) the growth of the used heap over many
// batches, divided by the calls, is what they allocated. The Rust side's own allocations are
// the core's, measured by `cargo bench -p tooljig --bench memory`.
//
// Run: `node --expose-gc --min-semi-space-size=128 --max-semi-space-size=128 bench/memory.mjs` (any addon build; the
// bytes do not depend on it). Figures go to BENCHMARKS.md.
import v8 from 'node:v8'
import { PerformanceObserver } from 'node:perf_hooks'
import { Engine, tool } from '../lib/index.mjs'

if (typeof globalThis.gc !== 'function') {
  console.error('run with: node --expose-gc --min-semi-space-size=128 --max-semi-space-size=128 bench/memory.mjs')
  process.exit(1)
}
const { default: Ajv } = await import('ajv')

const jsonInput = { type: 'object', properties: { id: { type: 'integer' }, q: { type: 'string' } }, required: ['id', 'q'], additionalProperties: false }
const lookup = ({ id, q }) => ({ id, q, n: q.length })
const engines = {
  sync: new Engine().register('lookup', tool({ description: 'Looks an item up.', inputSchema: jsonInput, execute: lookup })),
  Promise: new Engine().register('lookup', tool({ description: 'Looks an item up.', inputSchema: jsonInput, execute: async (a) => lookup(a) })),
}
const validate = new Ajv().compile(jsonInput)
const promiseAll = (calls) =>
  Promise.all(calls.map(async (c) => {
    const args = JSON.parse(c.arguments)
    if (!validate(args)) return { callId: c.id, envelope: { ok: false, error: { code: 'invalid_arguments' } } }
    return { callId: c.id, envelope: { ok: true, data: await lookup(args) } }
  }))

let collections = 0
new PerformanceObserver((list) => { collections += list.getEntries().length }).observe({ entryTypes: ['gc'] })
// The observer hears of a collection a little later: long enough for it to have heard.
const tick = () => new Promise((r) => setTimeout(r, 20))

async function allocated(run, calls, batches) {
  for (let i = 0; i < batches; i++) await run(calls)
  await tick()
  globalThis.gc()
  await tick()
  const seen = collections
  const before = v8.getHeapStatistics().used_heap_size
  for (let i = 0; i < batches; i++) await run(calls)
  const after = v8.getHeapStatistics().used_heap_size
  await tick()
  return { bytes: (after - before) / (calls.length * batches), collected: collections - seen }
}

console.log('| path | calls a batch | bytes a call (JS heap) |')
console.log('|---|---|---|')
for (const [n, batches] of [[1, 2000], [1000, 10]]) {
  const calls = Array.from({ length: n }, (_, i) => ({ id: `c${i}`, tool: 'lookup', arguments: JSON.stringify({ id: i, q: `item ${i}` }) }))
  const paths = [
    ['tooljig, sync handler', (c) => engines.sync.run(c)],
    ['tooljig, Promise handler', (c) => engines.Promise.run(c)],
    ['Promise.all + ajv + envelopes', promiseAll],
  ]
  for (const [name, run] of paths) {
    const { bytes, collected } = await allocated(run, calls, batches)
    const note = collected ? ` (${collected} collections ran: too low)` : ''
    console.log(`| ${name} | ${n} | ${bytes.toFixed(0)}${note} |`)
  }
}
