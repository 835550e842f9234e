// The approval inbox's handle: `engine.serveInbox()` (docs/operators.md).
import { Server } from './server.mjs'

/** A running approval inbox: its `url`, `stop()`, `wait()`. */
export class InboxServer extends Server {}
