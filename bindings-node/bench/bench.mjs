// Per-call overhead of a 1,000-call batch, side by side in one run:
//   tooljig with a sync handler, tooljig with a Promise handler,
//   plain Promise.all + ajv validation + object envelopes (hand-written, no orchestration at all),
//   the Vercel AI SDK 6 executing the same tools (zod schemas) from a mock model's response.
// Every path gets the same 1,000 calls with JSON-string arguments, as a model sends them, and
// trivial handlers, so wall time / 1,000 is the per-call cost of the machinery. The core floor
// (`coreFloorUs`: the same workload through a Rust no-op handler) separates the core's own cost
// from what the binding adds.
//
// Run: `node bench/bench.mjs` (builds the release addon first with the install script's
// `cargo build --release`, with the `bench` feature that adds `coreFloorUs`, which the shipped
// addon leaves out; `--no-build` to skip when such a build is already there).
// Options: --calls N (default 1000), --reps N (default 30).
import { execFileSync } from 'node:child_process'
import { readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import os from 'node:os'

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name)
  return i === -1 ? dflt : Number(process.argv[i + 1])
}
const CALLS = arg('--calls', 1000)
const REPS = arg('--reps', 30)
const root = fileURLToPath(new URL('..', import.meta.url))

if (!process.argv.includes('--no-build')) {
  execFileSync(process.execPath, ['scripts/install.mjs'], { cwd: root, stdio: 'inherit', env: { ...process.env, TOOLJIG_FORCE_BUILD: '1', TOOLJIG_FEATURES: 'bench' } })
}

const { Engine, tool } = await import('../lib/index.mjs')
// The addon itself, not the generated loader: the loader lists only what the shipped addon has.
const addon = readdirSync(root).find((f) => /^tooljig\..+\.node$/.test(f))
const native = createRequire(import.meta.url)(join(root, addon))
const { buildProfile } = native
if (typeof native.coreFloorUs !== 'function') {
  console.error('bench: the loaded addon was built without the bench feature; run without --no-build')
  process.exit(1)
}
if (buildProfile() !== 'release') {
  console.error('bench: the loaded addon is a debug build; run without --no-build (release only)')
  process.exit(1)
}
const { z } = await import('zod')
const { default: Ajv } = await import('ajv')
const { generateText, stepCountIs, tool: aiTool } = await import('ai')
const { MockLanguageModelV3 } = await import('ai/test')

// The workload: a lookup tool with a typed input, called 1,000 times.
const zodInput = z.object({ id: z.number().int(), q: z.string() })
const jsonInput = { type: 'object', properties: { id: { type: 'integer' }, q: { type: 'string' } }, required: ['id', 'q'], additionalProperties: false }
const lookup = ({ id, q }) => ({ id, q, n: q.length })
const argText = (i) => JSON.stringify({ id: i, q: `item ${i}` })
const calls = Array.from({ length: CALLS }, (_, i) => ({ id: `c${i}`, tool: 'lookup', arguments: argText(i) }))

// tooljig
const syncEngine = new Engine().register('lookup', tool({ description: 'Looks an item up.', inputSchema: jsonInput, execute: lookup }))
const asyncEngine = new Engine().register('lookup', tool({ description: 'Looks an item up.', inputSchema: jsonInput, execute: async (a) => lookup(a) }))
const zodEngine = new Engine().register('lookup', tool({ description: 'Looks an item up.', inputSchema: zodInput, execute: async (a) => lookup(a) }))
const check = (out) => {
  if (out.results.length !== CALLS || !out.results.every((r) => r.envelope.ok)) throw new Error('a tooljig call failed')
}

// Promise.all + ajv + object envelopes
const ajv = new Ajv()
const validate = ajv.compile(jsonInput)
async function promiseAll() {
  const results = await Promise.all(calls.map(async (c) => {
    let args
    try {
      args = JSON.parse(c.arguments)
    } catch (e) {
      return { callId: c.id, envelope: { ok: false, error: { code: 'malformed_arguments', message: String(e), retryable: false } } }
    }
    if (!validate(args)) {
      return { callId: c.id, envelope: { ok: false, error: { code: 'invalid_arguments', message: ajv.errorsText(validate.errors), retryable: false } } }
    }
    try {
      return { callId: c.id, envelope: { ok: true, data: await lookup(args) } }
    } catch (e) {
      return { callId: c.id, envelope: { ok: false, error: { code: 'internal_error', message: 'failed', retryable: false } } }
    }
  }))
  if (results.length !== CALLS || !results.every((r) => r.envelope.ok)) throw new Error('a Promise.all call failed')
}

// Vercel AI SDK: one step whose model response holds CALLS tool calls.
const toolCalls = calls.map((c) => ({ type: 'tool-call', toolCallId: c.id, toolName: 'lookup', input: c.arguments }))
const usage = { inputTokens: { total: 10, noCache: 10, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 10, text: 10, reasoning: 0 } }
const model = new MockLanguageModelV3({
  doGenerate: async () => ({ content: toolCalls, finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage, warnings: [] }),
})
const aiTools = { lookup: aiTool({ description: 'Looks an item up.', inputSchema: zodInput, execute: async (a) => lookup(a) }) }
async function aiSdk() {
  const r = await generateText({ model, tools: aiTools, prompt: 'look things up', stopWhen: stepCountIs(1) })
  if (r.toolResults.length !== CALLS) throw new Error(`the AI SDK returned ${r.toolResults.length} tool results`)
}

const paths = [
  ['tooljig, sync handler', async () => check(await syncEngine.run(calls))],
  ['tooljig, Promise handler', async () => check(await asyncEngine.run(calls))],
  ['tooljig, Promise handler, zod schema', async () => check(await zodEngine.run(calls))],
  ['Promise.all + ajv + envelopes', promiseAll],
  ['Vercel AI SDK 6 generateText (mock model)', aiSdk],
]

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}
const samples = new Map(paths.map(([name]) => [name, []]))
for (const [, fn] of paths) for (let i = 0; i < 5; i++) await fn() // warm-up: JIT, schema caches
// Interleave the paths so drift on a shared machine hits them alike, and rotate their order so
// that none always follows the same one. The AI SDK runs apart, after them: it leaves garbage
// and pending work behind that whatever ran next paid for (interleaved with it, a tooljig
// one-call batch measured 27-61 µs; apart, 18 µs).
const apart = new Set(['Vercel AI SDK 6 generateText (mock model)'])
const together = paths.filter(([name]) => !apart.has(name))
const timed = async (name, fn) => {
  const t0 = performance.now()
  await fn()
  samples.get(name).push(((performance.now() - t0) * 1000) / CALLS)
}
for (let rep = 0; rep < REPS; rep++) {
  const first = rep % together.length
  for (const [name, fn] of [...together.slice(first), ...together.slice(0, first)]) await timed(name, fn)
}
for (const [name, fn] of paths.filter(([name]) => apart.has(name))) {
  for (let rep = 0; rep < REPS; rep++) await timed(name, fn)
}

// The core alone on the same runtime (a Rust no-op handler): what the binding adds is the rest.
const floor = await native.coreFloorUs(CALLS, REPS)
const ai = median(samples.get('Vercel AI SDK 6 generateText (mock model)'))
console.log(`\n${CALLS} calls per batch, ${REPS} reps (interleaved; the AI SDK apart), median µs per call; node ${process.version}, ${os.cpus().length} cpus (${os.cpus()[0]?.model ?? '?'})\n`)
console.log('| path | µs per call (median) | p10–p90 | AI SDK / this | above the core floor |')
console.log('|---|---:|---:|---:|---:|')
for (const [name] of paths) {
  const xs = [...samples.get(name)].sort((a, b) => a - b)
  const m = median(xs)
  const p = (q) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))].toFixed(1)
  const above = name.startsWith('tooljig') ? `${(m - floor).toFixed(1)}` : ''
  console.log(`| ${name} | ${m.toFixed(1)} | ${p(0.1)}–${p(0.9)} | ${(ai / m).toFixed(2)}x | ${above} |`)
}
console.log(`| core floor: Rust no-op handler, same workload, same runtime | ${floor.toFixed(1)} | | ${(ai / floor).toFixed(2)}x | 0 |`)
