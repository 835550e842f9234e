// The organisation's own data and services (seed 003's database and integrations): people and
// departments, files and their index, a mailbox, notifications. Nothing here knows about
// models or tooljig; the tools in tools.mjs call it.

export class Org {
  constructor() {
    this.users = new Map([
      ['u_ana', { id: 'u_ana', name: 'Ana Ruiz', email: 'ana@acme.test', departments: ['sales'], roles: ['user'] }],
      ['u_ben', { id: 'u_ben', name: 'Ben Ito', email: 'ben@acme.test', departments: ['sales'], roles: ['user'] }],
      ['u_cho', { id: 'u_cho', name: 'Cho Park', email: 'cho@acme.test', departments: ['legal'], roles: ['user'] }],
      ['u_tim', { id: 'u_tim', name: 'Tim Roe', email: 'tim@acme.test', departments: ['interns'], roles: ['user'] }],
    ])
    this.files = [
      { id: 'f_1', filename: 'q3-budget.xlsx', department: 'sales', text: 'Q3 budget by region' },
      { id: 'f_2', filename: 'contract-template.docx', department: 'legal', text: 'Standard contract template' },
      { id: 'f_3', filename: 'sales-playbook.pdf', department: 'sales', text: 'How we sell: budget talks, discovery' },
    ]
    this.sent = []
    this.notifications = []
    this.indexQueue = []
  }

  /** Files of `departments` whose name or text mentions `query`. */
  searchFiles(query, departments, limit) {
    const q = query.toLowerCase()
    return this.files
      .filter((f) => departments.includes(f.department) && f.status !== 'processing')
      .filter((f) => `${f.filename} ${f.text}`.toLowerCase().includes(q))
      .slice(0, limit)
      .map(({ id, filename, department }) => ({ id, filename, department }))
  }

  sendEmail(from, mail) {
    const email = { id: `m_${this.sent.length + 1}`, from, ...mail, sentAt: new Date().toISOString() }
    this.sent.push(email)
    return email
  }

  notify(userId, kind, payload) {
    this.notifications.push({ userId, kind, payload })
  }

  /** Stores an uploaded file as `processing` and queues its indexing; returns its id. */
  upload(owner, department, filename, content, contentType) {
    const id = `f_${this.files.length + 1}`
    this.files.push({ id, filename, department, owner, contentType, text: '', status: 'processing' })
    this.indexQueue.push({ id, content })
    return id
  }

  /** Extracts and indexes one queued file (the seed's async processing). */
  index(id, content) {
    const file = this.files.find((f) => f.id === id)
    file.text = Buffer.from(content, 'base64').toString('utf8')
    file.status = 'indexed'
    file.indexedAt = new Date().toISOString()
    return file
  }
}
