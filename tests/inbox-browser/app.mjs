// The app of the browser test: a Node process that asks for approvals (`suspend`), another
// that continues the run once an operator decided (`resume RUN_ID`), both printing JSON; and
// the app's worker (`worker`), which carries out what operators ask from the inbox (resume,
// roll back) until it is stopped, with the handlers and the compensation below.
import { Engine, tool } from '../../bindings-node/lib/index.mjs'

const [, , command, store, audit, ...rest] = process.argv
const engine = new Engine({ stateStore: store, audit })
engine.register(
  'send_email',
  tool({
    description: 'Sends an email.',
    inputSchema: {
      type: 'object',
      properties: { to: { type: 'string' }, subject: { type: 'string' } },
      required: ['to', 'subject'],
      additionalProperties: false,
    },
    execute: ({ to, subject }) => `sent "${subject}" to ${to}`,
  }),
  { risk: 'high', approval: { required: 'always' } },
)

engine.compensateWith('send_email', ({ result }) => `recalled: ${result}`)

if (command === 'suspend') {
  // Each argument is one recipient: one call, one approval request.
  const calls = rest.map((to, i) => ({ id: `c${i}`, tool: 'send_email', arguments: { to, subject: `Hello ${i}` } }))
  const out = await engine.run(calls, { caller: { principal: 'alice' } })
  console.log(JSON.stringify({ runId: out.runId, statuses: out.results.map((r) => r.status) }))
} else if (command === 'resume') {
  const out = await engine.resume(rest[0])
  console.log(JSON.stringify(out.results.map((r) => ({ id: r.callId, status: r.status, envelope: r.envelope }))))
} else if (command === 'worker') {
  const stop = new AbortController()
  process.on('SIGTERM', () => stop.abort())
  console.log('ready')
  await engine.serveOperatorRequests({ worker: 'app-worker', signal: stop.signal })
} else {
  throw new Error(`unknown command ${command}`)
}
