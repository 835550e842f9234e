// The assistant's tools (seed 003's tool specification) over the org's services, with the
// seed's permission model as tooljig policy: enabled flags system → tenant → department →
// user (settings), argument-level permission (relay only within one's departments: the
// policy hook), confirmation for email that learns "always allow" (approval + preferences),
// and asynchronous indexing for uploads (a background job).
import { z } from 'zod'
import { Engine, ToolError, accepted, tool } from 'tooljig'

/** Who may use what, as the seed's permission hierarchy: web search is off for everyone,
 * interns send no email, and Tim has switched relaying off for himself. */
export const SETTINGS = {
  system: { search_web: false },
  departments: { interns: { send_email: false } },
  users: { u_tim: { relay_message: false } },
}

const departmentsOf = (caller) => caller.attributes?.departments ?? []

/** The engine with the seed's tools; `stateStore` keeps approvals, preferences and jobs. */
export function buildEngine(org, { stateStore = 'memory' } = {}) {
  const engine = new Engine({
    audit: 'memory',
    stateStore,
    settings: SETTINGS,
    // Argument-level permission: a relay goes only to someone sharing a department.
    policyHook: ({ tool, arguments: args, caller }) => {
      if (tool !== 'relay_message') return true
      const target = org.users.get(args.userId)
      if (!target) return true // the handler answers not_found
      const shared = target.departments.some((d) => departmentsOf(caller).includes(d))
      return shared ? true : { allow: false, reason: `${target.name} is not in any of your departments` }
    },
  })

  engine.register('search_files', tool({
    description: "Search the files of the user's departments by name or content.",
    inputSchema: z.object({
      query: z.string().describe('What to look for'),
      limit: z.number().int().min(1).max(50).default(10).describe('Most results'),
    }),
    execute: ({ query, limit }, ctx) => org.searchFiles(query, departmentsOf(ctx.caller), limit),
  }), { effect: 'read' })

  engine.register('search_web', tool({
    description: 'Search the public web.',
    inputSchema: z.object({ query: z.string() }),
    execute: ({ query }) => [{ title: `Results for ${query}` }],
  }), { effect: 'read' })

  engine.register('send_email', tool({
    description: 'Send email on behalf of the user. Needs the user\'s confirmation unless they chose "always allow".',
    inputSchema: z.object({
      to: z.array(z.string().email()).min(1).describe('Recipient email addresses'),
      cc: z.array(z.string().email()).optional(),
      bcc: z.array(z.string().email()).optional(),
      subject: z.string().describe('Email subject'),
      body: z.string().describe('Email body (HTML or plain text)'),
      accountId: z.string().optional().describe('Email account to send from'),
      attachments: z.array(z.object({ fileId: z.string() })).optional(),
    }),
    execute: (mail, ctx) => {
      const sent = org.sendEmail(ctx.caller.principal, mail)
      return { id: sent.id, status: 'sent', sentAt: sent.sentAt, requiresConfirmation: false }
    },
  }), { risk: 'high', effect: 'external', approval: { required: 'always' } })

  engine.register('relay_message', tool({
    description: 'Relay a message to another team member in one of your departments.',
    inputSchema: z.object({
      userId: z.string().describe('Target user ID'),
      message: z.string().describe('Message content'),
      context: z.string().optional().describe('Context about the message'),
    }),
    execute: ({ userId, message, context }, ctx) => {
      if (!org.users.has(userId)) throw new ToolError('not_found', `no user ${userId}; get_team_members lists them`)
      org.notify(userId, 'relay', { from: ctx.caller.principal, message, context })
      return { success: true, delivered: true, deliveredAt: new Date().toISOString() }
    },
  }))

  engine.register('upload_file', tool({
    description: 'Upload and index a file for the assistant to reference. Indexing runs in the background.',
    inputSchema: z.object({
      filename: z.string(),
      content: z.string().describe('File content, base64 encoded'),
      contentType: z.string().describe('MIME type'),
      conversationId: z.string().optional(),
      autoSave: z.boolean().default(true),
    }),
    execute: ({ filename, content, contentType }, ctx) => {
      const department = departmentsOf(ctx.caller)[0]
      const id = org.upload(ctx.caller.principal, department, filename, content, contentType)
      return accepted(`index_${id}`)
    },
  }), { jobExpiryMs: 60_000 })

  engine.register('get_team_members', tool({
    description: "List the members of the user's departments (ids, names, emails).",
    inputSchema: z.object({ departmentId: z.string().optional() }),
    execute: ({ departmentId }, ctx) => {
      const mine = departmentsOf(ctx.caller).filter((d) => !departmentId || d === departmentId)
      return [...org.users.values()]
        .filter((u) => u.departments.some((d) => mine.includes(d)))
        .map(({ id, name, email }) => ({ id, name, email }))
    },
  }), { effect: 'read' })

  return engine
}

/** The indexing worker: indexes every queued upload, reports each job done (any process
 * sharing the state store may), and resumes its run so the upload's call ends `indexed` in
 * the run and the audit log. Answers the final statuses. */
export async function drainIndex(org, engine) {
  const done = []
  while (org.indexQueue.length > 0) {
    const { id, content } = org.indexQueue.shift()
    const file = org.index(id, content)
    const status = await engine.completeJob(`index_${id}`, { id, filename: file.filename, status: 'indexed', indexedAt: file.indexedAt })
    const run = await engine.resume(status.runId)
    done.push(run.results.find((r) => r.callId === status.callId).envelope.data)
  }
  return done
}
