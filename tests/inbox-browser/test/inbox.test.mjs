// The approval inbox in a real browser (Debian's Chromium, driven by Playwright): a run
// suspends in one process, the operator signs in and decides in the page served by a second
// (`tooljig serve`), a third process resumes the run. Forged and replayed decisions are
// refused; every outcome lands in the audit log and the chain verifies. Screenshots go to
// `screenshots/` (docs/operators.md shows them).
import assert from 'node:assert/strict'
import { execFileSync, spawn } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { test } from 'node:test'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'

const here = fileURLToPath(new URL('..', import.meta.url))
const app = join(here, 'app.mjs')
const tooljig = join(here, '../../bindings-node/bin/tooljig.mjs')
const shots = process.env.INBOX_SCREENSHOTS ?? join(here, 'screenshots')

test('an operator decides in the browser what one process asked, and another resumes', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'tooljig-inbox-browser-'))
  const env = {
    ...process.env,
    TOOLJIG_STORE: `sqlite://${join(dir, 'store.db')}`,
    TOOLJIG_AUDIT: `sqlite://${join(dir, 'audit.db')}`,
  }
  const node = (...args) => execFileSync(process.execPath, args, { env, encoding: 'utf8' })
  const appRun = (...args) => JSON.parse(node(app, args[0], env.TOOLJIG_STORE, env.TOOLJIG_AUDIT, ...args.slice(1)))
  mkdirSync(shots, { recursive: true })
  const shot = (page, name) => page.screenshot({ path: join(shots, `${name}.png`), fullPage: true })

  // Process 1: the app asks for three approvals and exits.
  const first = appRun('suspend', 'ada@example.com', 'bob@example.com', 'eve@example.com')
  assert.deepEqual(first.statuses, ['pending_approval', 'pending_approval', 'pending_approval'])

  // Process 2: the inbox.
  const server = spawn(process.execPath, [tooljig, 'serve', '--bind', '127.0.0.1:0', '--token', 'alice-token=alice', '--token', 'mallory-token=mallory'], { env })
  t.after(() => server.kill())
  const url = await new Promise((resolve, reject) => {
    let said = ''
    server.stderr.on('data', (chunk) => {
      said += chunk
      const found = said.match(/on (http:\/\/\S+\/)/)
      if (found) resolve(found[1])
    })
    server.on('exit', (code) => reject(new Error(`tooljig serve exited with ${code}: ${said}`)))
  })

  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
    args: ['--no-sandbox'],
  })
  t.after(() => browser.close())
  const page = await browser.newPage({ viewport: { width: 1100, height: 800 } })
  const requests = page.locator('section.request')
  const request = (to) => page.locator('section.request', { has: page.locator('pre', { hasText: to }) })
  const pendingCount = async (n) => page.waitForFunction((n) => document.querySelectorAll('section.request').length === n, n)

  // Not signed in: the sign-in form, and nothing else.
  const refused = await page.goto(url)
  assert.equal(refused.status(), 401)
  assert.equal(await requests.count(), 0)
  await page.fill('input[name=token]', 'wrong-token')
  await page.click('button:has-text("Sign in")')
  assert.match(await page.locator('#refusal').innerText(), /unknown bearer token/)
  await shot(page, '1-sign-in')
  await page.fill('input[name=token]', 'alice-token')
  await page.click('button:has-text("Sign in")')
  await pendingCount(3)
  assert.match(await page.locator('body').innerText(), /Signed in as alice/)

  // A request made while the page is open appears without a reload by hand.
  const second = appRun('suspend', 'dora@example.com')
  await pendingCount(4)
  await shot(page, '2-pending')

  // Keep what a forger would need: the forms as the page issued them.
  const form = async (to) => {
    const section = request(to)
    const value = (name) => section.locator(`input[name=${name}]`).inputValue()
    return { id: await value('id'), hash: await value('hash'), csrf: await value('csrf') }
  }
  const ada = await form('ada@example.com')
  const eve = await form('eve@example.com')

  // Approve one, always allowing the tool for who asked.
  await request('ada@example.com').locator('input[name=remember]').check()
  await request('ada@example.com').getByRole('button', { name: 'Approve', exact: true }).click()
  await pendingCount(3)

  // Edit one: an edit that breaks the schema is refused on the page, with what was typed.
  const bob = request('bob@example.com')
  await bob.locator('summary').click()
  await bob.locator('textarea').fill('{"to": 5, "subject": "Hello 1"}')
  await bob.getByRole('button', { name: 'Approve with these arguments' }).click()
  await page.locator('.refused').waitFor()
  assert.match(await page.locator('.refused').innerText(), /Edit refused/)
  assert.equal(await request('bob@example.com').locator('textarea').inputValue(), '{"to": 5, "subject": "Hello 1"}')
  await shot(page, '3-edit-refused')
  await request('bob@example.com').locator('textarea').fill('{"to": "grace@example.com", "subject": "Hello 1"}')
  await request('bob@example.com').getByRole('button', { name: 'Approve with these arguments' }).click()
  await pendingCount(2)

  // Reject one with a message for the model.
  const evesSection = request('eve@example.com')
  await evesSection.locator('input[name=message]').fill('Not to this address')
  await evesSection.getByRole('button', { name: 'Reject' }).click()
  await pendingCount(1)
  const decided = page.locator('#decided')
  assert.match(await decided.innerText(), /send_email\s+edited\s+alice/)
  assert.match(await decided.innerText(), /Not to this address/)
  assert.equal(await decided.locator('del').first().innerText(), '"bob@example.com"')
  assert.equal(await decided.locator('ins').first().innerText(), '"grace@example.com"')
  await shot(page, '4-decided')

  // Forgeries, outside the page: no session, a forged form, another operator's decision, a
  // stale hash, and a replay of a form already used.
  const post = (token, fields) =>
    fetch(new URL('/decide', url), {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields),
      redirect: 'manual',
    }).then((r) => r.status)
  assert.equal((await fetch(new URL('/decide', url), { method: 'POST' })).status, 401)
  const dora = await form('dora@example.com')
  assert.equal(await post('alice-token', { ...dora, csrf: 'forged', decision: 'approve' }), 403)
  assert.equal(await post('mallory-token', { ...dora, decision: 'approve' }), 403, "alice's form is hers")
  assert.equal(await post('alice-token', { ...dora, hash: eve.hash, decision: 'approve' }), 409)
  assert.equal(await post('alice-token', { ...ada, decision: 'approve' }), 409, 'a replay')
  assert.equal(await post('alice-token', { ...eve, decision: 'approve' }), 409, 'a decided request stays decided')

  // The preference learned with the approval, and its revocation.
  await page.click('nav >> text=Preferences')
  assert.match(await page.locator('#preferences').innerText(), /alice\s+send_email/)
  await shot(page, '5-preferences')
  await page.locator('#preferences').getByRole('button', { name: 'Revoke' }).click()
  await page.waitForFunction(() => document.querySelectorAll('#preferences tr').length === 1)

  // Process 3: the app resumes the run: the approved and the edited calls run, the rejected
  // one does not, and the model reads why.
  const resumed = JSON.parse(node(app, 'resume', env.TOOLJIG_STORE, env.TOOLJIG_AUDIT, first.runId))
  const by = Object.fromEntries(resumed.map((r) => [r.id, r]))
  assert.deepEqual(by.c0.envelope, { ok: true, data: 'sent "Hello 0" to ada@example.com' })
  assert.deepEqual(by.c1.envelope, { ok: true, data: 'sent "Hello 1" to grace@example.com' })
  assert.equal(by.c2.envelope.error.code, 'approval_rejected')
  assert.match(JSON.stringify(by.c2.envelope), /Not to this address/)

  // The run's timeline, the audit log, and its chain verified from the page.
  await page.goto(new URL(`/runs/${first.runId}`, url).href)
  assert.match(await page.locator('body').innerText(), /state finished/)
  assert.match(await page.locator('#timeline').innerText(), /edited · by alice/)
  await shot(page, '6-run')
  await page.click('nav >> text=Audit log')
  await page.click('button:has-text("Verify chain")')
  assert.match(await page.locator('#verdict').innerText(), /^Intact: \d+ records\.$/)
  await page.goBack()
  await shot(page, '7-audit')

  const audit = node(tooljig, 'audit', '--json')
    .trim()
    .split('\n')
    .map((line) => JSON.parse(line))
  const outcomes = audit.map((r) => (r.outcome === 'error' ? `error:${r.code}` : r.outcome))
  assert.equal(outcomes.filter((o) => o === 'pending_approval').length, 4, outcomes.join(' '))
  assert.equal(outcomes.filter((o) => o === 'ok').length, 2, outcomes.join(' '))
  assert.equal(outcomes.filter((o) => o === 'error:approval_rejected').length, 1, outcomes.join(' '))
  assert.match(node(tooljig, 'audit', 'verify'), /^intact: \d+ records/)
  assert.equal(second.statuses[0], 'pending_approval')
  rmSync(dir, { recursive: true, force: true })
})
