// The organisation assistant of seed 003 on tooljig, in Node. Offline with a scripted model;
// with OPENAI_API_KEY, OpenAI's Chat Completions plays the model. Run:
//   bash apps/run.sh org_assistant        (or: npm install && node main.mjs, here)
import { fileURLToPath } from 'node:url'
import { Assistant, callerOf } from './assistant.mjs'
import { openaiChat, scriptedChat } from './model.mjs'
import { Org } from './org.mjs'
import { buildEngine, drainIndex } from './tools.mjs'

/** The demo conversation; returns what the test checks. */
export async function demo({ log = console.log } = {}) {
  const org = new Org()
  const engine = buildEngine(org)
  const directory = Object.fromEntries([...org.users.values()].map((u) => [u.name.split(' ')[0].toLowerCase(), u.id]))
  const complete = process.env.OPENAI_API_KEY ? openaiChat(process.env.OPENAI_API_KEY) : scriptedChat(directory)
  const assistant = new Assistant(engine, complete)
  const ana = org.users.get('u_ana')
  const tim = org.users.get('u_tim')
  const transcript = []
  const say = async (user, text) => {
    const { reply, results } = await assistant.chat(user, text)
    transcript.push({ user: user.id, text, reply, results })
    log(`${user.name.padStart(9)}: ${text}\n  assistant: ${reply}`)
    return results
  }

  await say(ana, 'Find files about budget')
  await say(ana, 'Search the web for competitor pricing')
  const [email] = await say(ana, 'Email bob@partner.test about the Q3 numbers')
  const confirmed = await assistant.confirm(email.result.id, { always: true })
  log(`  (Ana confirms, "always allow": ${confirmed.status})`)
  await say(ana, 'Email bob@partner.test about the follow-up call')
  await say(ana, 'Relay to Ben: the client called back')
  await say(ana, 'Relay to Cho: please review the contract')
  await say(tim, 'Email ana@acme.test about lunch')
  await say(tim, 'Relay to Ana: hello')
  const [upload] = await say(ana, 'Upload notes.txt')
  const before = await engine.jobStatus(upload.result.id)
  const [indexed] = await drainIndex(org, engine)
  const after = await engine.jobStatus(upload.result.id)
  log(`  (indexing: ${before.state} → ${after.state}; the file is ${indexed.status})`)
  await say(ana, 'Find files about renewal')

  const audit = await engine.audit({ principal: 'u_ana' })
  log('\naudit of Ana\'s actions:')
  for (const r of audit) log(`  ${r.tool.padEnd(16)} ${r.outcome.padEnd(16)} ${r.code ?? ''}`)
  return { org, engine, transcript, confirmed, indexed, jobStates: [before.state, after.state], audit, caller: callerOf(ana) }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await demo()
