// Idiomatic use of the durable-run API must type-check (tests/types.test.mjs runs tsc --strict).
import { Engine, ToolError } from 'tooljig'
import type { ApprovalRecord, BatchResult, Decision, ExternalCall, Preference, RollbackReport, RunRecord } from 'tooljig'

const engine = new Engine({
  stateStore: { sqlite: '/tmp/state.db' },
  approvalRules: { minRisk: 'high' },
  approvalPredicate: async ({ tool, arguments: args, caller, risk }) => tool === 'refund' && risk !== 'low' && caller.principal !== 'root' && args !== null,
  externalExpiryMs: 60_000,
})
engine.registerSpec({ name: 'send_email', inputSchema: { type: 'object' }, policy: { risk: 'high', approval: { approverRoles: ['reviewer'] }, compensation: 'unsend' } })
engine.compensateWith('charge', async ({ arguments: args, result }, ctx) => ({ refunded: args, of: result, tool: ctx.tool }))

async function main(): Promise<void> {
  const out: BatchResult = await engine.run([{ id: 'm', tool: 'send_email', arguments: {}, idempotencyKey: 'req-1' }], { caller: { principal: 'alice' }, atomic: true })
  const first = out.results[0]
  if (first.status === 'pending_approval' && first.approval?.id !== undefined && out.runId !== undefined) {
    const decision: Decision = { decision: 'approve', argumentsHash: first.approval.argumentsHash, remember: { scope: ['to'] } }
    const record: ApprovalRecord = await engine.decide(first.approval.id, decision, { principal: 'rita', roles: ['reviewer'] })
    void record.decision?.by
    const resumed: BatchResult = await engine.resume(out.runId)
    void resumed.results[0].recovered
    const report: RollbackReport = await engine.rollback(out.runId, 'm')
    void report.entries.map((e) => e.outcome === 'not_reversible')
    const run: RunRecord | null = await engine.runRecord(out.runId)
    void run?.state
    const pending: ExternalCall[] = await engine.pendingExternal(out.runId)
    await engine.submitResult(out.runId, pending[0].callId, new ToolError('permission_denied', 'declined'), { principal: 'u1' })
  }
  const inbox: ApprovalRecord[] = await engine.pendingApprovals('acme')
  const pref: Preference = await engine.allowAlways({ principal: 'alice' }, 'send_email', { to: 'bob@x.io' })
  const all: Preference[] = await engine.preferences({ principal: 'alice' })
  const revoked: boolean = await engine.revokePreference({ principal: 'alice' }, pref.id)
  void [inbox, all, revoked]
}
void main

// @ts-expect-error a decision names the arguments hash it was made for
const unbound: Decision = { decision: 'approve' }
void unbound
// @ts-expect-error the predicate answers with a boolean
new Engine({ approvalPredicate: () => 'yes' })
