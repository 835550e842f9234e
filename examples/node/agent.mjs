// The agent loop from Node, scheduling a meeting: "set a meeting with Aviad tomorrow". The duration is
// missing, so the tool answers `needs`, the model asks one question, the user answers, and
// the meeting is scheduled. Then the same agent serves a run over HTTP as an AI SDK UI
// message stream, which a `useChat` front end renders as it happens.
//
// The model here is a JavaScript function that plays a planner from the request, so the
// example runs offline; swap in your own SDK call, or a built-in client:
//   HttpModel.openaiCompatible('gpt-4o-mini')                      // OPENAI_API_KEY
//   HttpModel.openaiCompatible('llama3.1', { baseUrl: 'http://localhost:11434/v1' })
//   HttpModel.anthropic('claude-sonnet-4-5')                       // ANTHROPIC_API_KEY
//
// Run: `npm install` in this folder, then
//   node examples/node/agent.mjs
import { createServer } from 'node:http'
import { Agent, AgentState, Engine, Model, needs, pipeUiMessageStream } from 'tooljig'

const people = { aviad: 'aviad@example.com', noa: 'noa@example.com' }
const engine = new Engine()
engine.register('schedule_meeting', {
  description: 'Schedules a meeting with a colleague.',
  inputSchema: {
    type: 'object',
    properties: {
      with: { type: 'string', description: "The colleague's first name." },
      day: { type: 'string', description: 'today or tomorrow' },
      durationMins: { type: 'integer', minimum: 5 },
    },
    required: ['with', 'day'],
  },
  execute: (args) => {
    if (args.durationMins === undefined) return needs('durationMins')
    // The counterpart's name is resolved here, server-side: the model never sees addresses.
    const email = people[args.with.toLowerCase()]
    return { scheduled: true, with: email, day: args.day, durationMins: args.durationMins }
  },
})

/** A planner standing in for a real model: it reads the conversation like one would. */
const planner = Model.fromFunction(async (request, emit) => {
  const last = request.messages.at(-1)
  if (request.toolChoice === 'none' || request.tools.length === 0) return 'How long should the meeting be?'
  if (last.role === 'tool') {
    const { envelope } = last.results[0]
    const text = envelope.ok ? `Done: ${envelope.data.durationMins} minutes with Aviad ${envelope.data.day}.` : 'I could not schedule it.'
    emit({ type: 'text_delta', delta: text }) // a streaming SDK would emit as tokens arrive
    return text
  }
  const minutes = /(\d+)\s*min/.exec(last.content)?.[1]
  const args = { with: 'Aviad', day: 'tomorrow', ...(minutes ? { durationMins: Number(minutes) } : {}) }
  return { toolCalls: [{ id: `call_${request.messages.length}`, name: 'schedule_meeting', arguments: args }] }
}, { name: 'example-planner' })

const agent = new Agent(engine, planner, { system: 'You schedule meetings.' })

const state = new AgentState('Set a meeting with Aviad tomorrow')
const asked = await agent.run(state)
console.log(`status=${asked.status.status} answer=${JSON.stringify(asked.answer)}`)
const done = await agent.send(state, '30 minutes')
console.log(`status=${done.status.status} reason=${done.status.reason} answer=${JSON.stringify(done.answer)}`)
console.log(`counters steps=${done.counters.steps} toolCalls=${done.counters.toolCalls} needsLoops=${done.counters.needsLoops}`)

// A server for useChat: POST /api/chat streams a run as a UI message stream.
const server = createServer(async (req, res) => {
  const run = agent.run(new AgentState('Set a 45 min meeting with Aviad tomorrow'))
  await pipeUiMessageStream(run, res, { messageId: 'msg_1' })
})
await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
const response = await fetch(`http://127.0.0.1:${server.address().port}/api/chat`, { method: 'POST' })
const body = await response.text()
server.close()
const chunks = body.split('\n\n').filter((f) => f.startsWith('data: {')).map((f) => JSON.parse(f.slice(6)).type)
console.log(`ui-stream ${response.headers.get('x-vercel-ai-ui-message-stream')}: ${chunks.join(' ')}`)
