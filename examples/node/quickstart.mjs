// Quick start: one batch with parallel and dependent calls, a repaired argument, a `needs`,
// and a failing tool, printed as the envelopes a model would read.
//
// Run: `npm install` in this folder (links ../../bindings-node and builds its addon when missing), then
//   node examples/node/quickstart.mjs
import { setTimeout as sleep } from 'node:timers/promises'
import { z } from 'zod'
import { Engine, ToolError, tool } from 'tooljig'

const engine = new Engine()

engine.register('get_weather', tool({
  description: 'Current temperature of a city.',
  inputSchema: z.object({ city: z.string().describe('The city to look up.') }),
  execute: async ({ city }, { signal }) => {
    await sleep(50, undefined, { signal }) // pretend to call an API
    return { city, temperature_c: city === 'Oslo' ? 4.5 : 21.0 }
  },
}), { timeoutMs: 5000 })

engine.register('plan_outing', tool({
  description: 'Suggests an outing for a date.',
  inputSchema: z.object({
    city: z.string().describe('Where.'),
    temperature_c: z.number().describe('The forecast, in °C.'),
    date: z.string().describe('When, as an ISO date.'),
  }),
  execute: ({ city, date, temperature_c }) => ({ city, date, idea: temperature_c > 15 ? 'a picnic' : 'a museum' }),
}))

engine.register('book_table', tool({
  description: 'Books a restaurant table.',
  inputSchema: z.object({ city: z.string() }),
  execute: async () => {
    throw new ToolError('external_api_error', 'the booking service is down')
  },
}), { retry: { attempts: 2, backoffMs: 20 } })

const out = await engine.run([
  // Two independent lookups run in parallel; the first one's arguments need repair.
  { id: 'w1', tool: 'get_weather', arguments: "{'city': 'Lisbon',}" },
  { id: 'w2', tool: 'get_weather', arguments: '{"city": "Oslo"}' },
  // Depends on w1 and takes its temperature by reference.
  { id: 'p1', tool: 'plan_outing', arguments: { city: 'Lisbon', date: '2026-11-28', temperature_c: { $from: 'w1', pointer: '/temperature_c' } } },
  // The model forgot the date: the envelope says what to ask the user.
  { id: 'p2', tool: 'plan_outing', arguments: { city: 'Oslo', temperature_c: { $from: 'w2', pointer: '/temperature_c' } } },
  // A failing tool, retried once, then reported.
  { id: 'b1', tool: 'book_table', arguments: { city: 'Lisbon' } },
], { caller: { principal: 'user-1' }, deadlineMs: 15_000 })

for (const r of out.results) {
  const flags = `attempts=${r.attempts} repaired=${r.repaired} ran ${r.startedUs ?? '-'}..${r.finishedUs} µs`
  console.log(`${r.callId.padEnd(3)} ${r.tool.padEnd(12)} ${JSON.stringify(r.envelope)}  [${flags}]`)
}
console.log(`batch took ${Math.round(out.durationUs / 1000)} ms`)
