// Seed 003 end to end: the demo conversation's transcript, the seed's result and error shapes,
// the org's data (mail sent, messages relayed, the upload indexed) and the audit log.
import assert from 'node:assert/strict'
import { before, test } from 'node:test'
import { Provider } from 'tooljig'
import { callerOf } from '../assistant.mjs'
import { demo } from '../main.mjs'

let run
before(async () => {
  run = await demo({ log: () => {} })
})

const replyTo = (text) => run.transcript.find((t) => t.text === text)

test('the transcript follows the seed', () => {
  assert.equal(replyTo('Find files about budget').reply, 'Found: q3-budget.xlsx, sales-playbook.pdf.', "only the sales department's files")
  assert.match(replyTo('Search the web for competitor pricing').reply, /not allowed .*system level/)
  assert.equal(replyTo('Email bob@partner.test about the Q3 numbers').reply, 'The email is ready: shall I send it? (yes / always)')
  assert.equal(run.confirmed.status, 'sent')
  assert.equal(replyTo('Email bob@partner.test about the follow-up call').reply, 'Email sent.', '"always allow" remembered')
  assert.equal(replyTo('Relay to Ben: the client called back').reply, 'Message delivered.')
  assert.match(replyTo('Relay to Cho: please review the contract').reply, /Cho Park is not in any of your departments/)
  assert.match(replyTo('Email ana@acme.test about lunch').reply, /department level/)
  assert.match(replyTo('Relay to Ana: hello').reply, /user level/)
  assert.equal(replyTo('Upload notes.txt').reply, 'Uploaded; indexing runs in the background.')
  assert.deepEqual(run.jobStates, ['pending', 'completed'])
  assert.equal(run.indexed.status, 'indexed')
  assert.equal(replyTo('Find files about renewal').reply, 'Found: notes.txt.', 'the indexed upload is searchable')
})

test("errors reach the model in the seed's error object", () => {
  const [web] = replyTo('Search the web for competitor pricing').results
  assert.deepEqual(web.result, {
    error: true,
    errorType: 'permission_denied',
    message: web.result.message,
    details: { tool: 'search_web', arguments: { query: 'competitor pricing' }, code: 'PERMISSION_DENIED', disabled_by: 'system' },
  })
  const [relay] = replyTo('Relay to Cho: please review the contract').results
  assert.equal(relay.result.errorType, 'permission_denied')
  assert.equal(relay.result.details.arguments.userId, 'u_cho')
})

test('the tools offered follow the enabled flags, in OpenAI format', () => {
  const openai = new Provider('openai_chat')
  const names = (user) => openai.tools(run.engine.specs(callerOf(run.org.users.get(user)))).map((t) => t.function.name)
  assert.ok(!names('u_ana').includes('search_web'))
  assert.ok(names('u_ana').includes('send_email') && names('u_ana').includes('relay_message'))
  assert.ok(!names('u_tim').includes('send_email') && !names('u_tim').includes('relay_message'))
  const email = openai.tools(run.engine.specs(run.caller)).find((t) => t.function.name === 'send_email')
  assert.equal(email.type, 'function')
  assert.deepEqual(email.function.parameters.required.sort(), ['body', 'subject', 'to'])
})

test("the org's data: two emails, one relay, the upload indexed in the uploader's department", () => {
  assert.deepEqual(run.org.sent.map((m) => [m.from, m.to[0], m.subject]), [
    ['u_ana', 'bob@partner.test', 'the Q3 numbers'],
    ['u_ana', 'bob@partner.test', 'the follow-up call'],
  ])
  assert.deepEqual(run.org.notifications.map((n) => [n.userId, n.payload.message]), [['u_ben', 'the client called back']])
  const notes = run.org.files.find((f) => f.filename === 'notes.txt')
  assert.deepEqual([notes.department, notes.status], ['sales', 'indexed'])
})

test('the audit log keeps every action, the learned preference and the refusals', async () => {
  const ana = run.audit.map((r) => [r.tool, r.outcome, r.code ?? null])
  assert.deepEqual(ana, [
    ['search_files', 'ok', null],
    ['search_web', 'error', 'permission_denied'],
    ['send_email', 'pending_approval', 'pending_approval'],
    ['send_email', 'ok', null],
    ['send_email', 'ok', null],
    ['relay_message', 'ok', null],
    ['relay_message', 'error', 'permission_denied'],
    ['upload_file', 'pending_job', 'pending_job'],
    ['upload_file', 'ok', null],
    ['search_files', 'ok', null],
  ])
  const [, second] = run.audit.filter((r) => r.tool === 'send_email' && r.outcome === 'ok').map((r) => r.approval)
  assert.equal(second.status, 'approved')
  assert.ok(second.preference_id ?? second.preferenceId, JSON.stringify(second))
  const [preference] = await run.engine.preferences(run.caller)
  assert.equal(preference.tool, 'send_email')
  const tim = await run.engine.audit({ principal: 'u_tim' })
  assert.deepEqual(tim.map((r) => [r.tool, r.code]), [['send_email', 'permission_denied'], ['relay_message', 'permission_denied']])
  assert.equal((await run.engine.verifyAudit()).broken, null)
})
