/**
 * The JSON logger (pino) and the one access-log line per request. Logs never carry tokens or
 * secrets: the access line names the acting user id, never headers, and `redact` removes any
 * authorization or cookie field that a caller might log by accident.
 */
import type { MiddlewareHandler } from 'hono';
import { type Logger, pino } from 'pino';
import type { Principal } from './auth.js';
import { activeTraceId } from './tracing.js';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: { service: 'flocklist' },
    timestamp: pino.stdTimeFunctions.isoTime,
    // The trace id of the request a line is logged in, when tracing records it.
    mixin: () => {
      const traceId = activeTraceId();
      return traceId ? { trace_id: traceId } : {};
    },
    redact: {
      paths: [
        'authorization',
        'cookie',
        '*.authorization',
        '*.cookie',
        'headers',
        '*.headers',
        'token',
        'secret',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

export function accessLog(logger: Logger): MiddlewareHandler {
  return async (c, next) => {
    const start = performance.now();
    await next();
    const principal = c.get('principal') as Principal | undefined;
    logger.info(
      {
        request_id: c.get('requestId'),
        method: c.req.method,
        path: c.req.path.slice(0, 256),
        status: c.res.status,
        ms: Math.round((performance.now() - start) * 100) / 100,
        actor: principal?.sub.toString(),
        replayed: c.res.headers.get('Idempotent-Replayed') === 'true' || undefined,
      },
      'request',
    );
  };
}
