// Tool definitions written for other systems, imported as tooljig specs (docs/tools.md).
import { nativeImportTools } from './native.mjs'
/** @import { ToolSpec } from './types.mjs' */

/**
 * Imports OpenAI function specs (Chat Completions, Responses or bare; one or a list) or BFCL
 * function docs (one, a list, or an entry with `function`; `category` such as `simple_java`
 * decides how parameters reach the model). Returns specs for `engine.registerSpec(spec,
 * execute)`: names made provider-safe and unique, the original kept as `originalName` so
 * calls by it still resolve. Throws a TypeError naming the place of a definition it cannot
 * read.
 * @param {unknown} definitions
 * @param {{format?: 'openai' | 'bfcl', category?: string, closeObjects?: boolean}} [options]
 * @returns {ToolSpec[]}
 */
export function importTools(definitions, options = {}) {
  let text
  try {
    text = JSON.stringify(definitions)
  } catch (e) {
    throw new TypeError(`tool definitions have no JSON form: ${e?.message ?? e}`)
  }
  if (text === undefined) throw new TypeError('tool definitions have no JSON form')
  try {
    return JSON.parse(nativeImportTools(text, JSON.stringify(options ?? {})))
  } catch (e) {
    throw new TypeError(e?.message ?? String(e))
  }
}
