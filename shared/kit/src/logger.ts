import { pino, type Logger } from 'pino';
import { currentContext } from './context.js';

export type { Logger } from 'pino';

/** pino to stdout; every line carries the request and merchant of the work it belongs to. */
export function createLogger(service: string, level: string = process.env.LOG_LEVEL ?? 'info'): Logger {
  return pino({
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin() {
      const context = currentContext();
      if (!context) return {};
      return context.merchantId ? { request_id: context.requestId, merchant_id: context.merchantId } : { request_id: context.requestId };
    },
    redact: { paths: ['req.headers.authorization', 'authorization', 'api_key', 'secret', 'client_secret'], censor: '[redacted]' },
  });
}
