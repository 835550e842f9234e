// Compiled (never run) by tests/types.test.mjs: the generated types must accept idiomatic
// use and infer handler argument types from zod schemas.
import { z } from 'zod'
import { Engine, ToolError, needs, tool, type BatchResult, type CallResult, type ErrorCode } from 'tooljig'

const weather = tool({
  description: 'The weather in a city.',
  inputSchema: z.object({ city: z.string(), days: z.number().default(1) }),
  execute: async ({ city, days }, ctx) => {
    const upper: string = city.toUpperCase()
    const n: number = days
    if (ctx.signal.aborted) throw new ToolError('cancelled', 'stopped')
    if (ctx.attempt > 1 && ctx.caller.principal === undefined) return needs('principal')
    return { city: upper, days: n, call: ctx.callId }
  },
})

const raw = tool<{ a: number }>({
  inputSchema: { type: 'object', properties: { a: { type: 'number' } } },
  execute: ({ a }) => a * 2,
})

const book = tool({
  inputSchema: z.object({ room: z.number() }),
  execute: ({ room }) => ({ booked: room }),
  onSuccess: async ({ arguments: args }, ctx) => {
    const room: number = args.room
    void [room, ctx.callId]
  },
})

const engine = new Engine({ limits: { maxDepth: 10 } })
engine.register('book', book)
engine.registerSpec({ name: 'ping' }, () => 'pong', { onSuccess: (event) => void event.result })
engine.register('weather', weather, { timeoutMs: 5000, retry: { attempts: 3, on: ['timeout'] }, after: [] })
engine.register('raw', raw)

async function main(): Promise<void> {
  const out: BatchResult = await engine.run([{ id: '1', tool: 'weather', arguments: '{"city": "Oslo"}' }], {
    caller: { principal: 'u1', scopes: ['weather.read'] },
    deadlineMs: 15_000,
    signal: AbortSignal.timeout(1000),
  })
  const first: CallResult = out.results[0]
  if (first.envelope.ok) {
    const data: unknown = first.envelope.data
    void data
  } else if ('error' in first.envelope) {
    const code: ErrorCode = first.envelope.error.code
    void code
  }
  for await (const ev of engine.stream([{ tool: 'raw', arguments: { a: 1 } }])) {
    if (ev.type === 'call_finished') void ev.result.envelope
  }
}
void main

// @ts-expect-error an unknown error code is a type error
new ToolError('no_such_code', 'x')

// @ts-expect-error n is a number, not a string
tool({ inputSchema: z.object({ n: z.number() }), execute: ({ n }: { n: string }) => n })
