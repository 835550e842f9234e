// OpenTelemetry: the spans of batches and calls exported over OTLP (docs/operators.md).
import { nativeExportTraces } from './native.mjs'

/**
 * Starts exporting a span per batch (`tooljig.batch`) and per call (`tooljig.call`: tool,
 * outcome, code, attempts, cached, replayed) to the OTLP/HTTP collector at `endpoint`
 * (`/v1/traces` is added when missing), from a thread of its own. Once per process. A batch run
 * with `{traceparent}` (W3C Trace Context, e.g. the incoming request's header) is a child of
 * that trace, in every resume too. Returns the export: `flush()` sends what is buffered,
 * `shutdown()` stops.
 * @param {string} endpoint
 * @param {{protocol?: 'http/protobuf' | 'http/json', serviceName?: string, headers?: Record<string, string>}} [options]
 * @returns {{flush(): void, shutdown(): void}}
 */
export function exportTraces(endpoint, options = {}) {
  if (typeof endpoint !== 'string') throw new TypeError('exportTraces() takes the collector URL as a string')
  try {
    return nativeExportTraces({ ...options, endpoint })
  } catch (e) {
    throw new TypeError(e?.message ?? String(e), { cause: e })
  }
}
