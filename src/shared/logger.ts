import { pino } from 'pino';

/** The logging seam: adapters and workers log through this, never `console`. */
export interface Logger {
  debug(obj: Record<string, unknown> | string, msg?: string): void;
  info(obj: Record<string, unknown> | string, msg?: string): void;
  warn(obj: Record<string, unknown> | string, msg?: string): void;
  error(obj: Record<string, unknown> | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

/**
 * A pino logger on stderr (stdout belongs to `--json` output). Secrets are scrubbed by the
 * caller through `redact()` before they reach a log line; pino's own redaction covers the
 * well-known key names as a second net.
 */
export function createLogger(level: string = process.env.UH_LOG_LEVEL ?? 'warn'): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: {
        paths: ['*.auth_token', '*.authorization', '*.Authorization', '*.api_key', '*.extra_headers', 'headers.*'],
        censor: '[redacted]',
      },
    },
    pino.destination({ fd: 2, sync: true }),
  ) as unknown as Logger;
}

/** A logger that drops everything: the default in tests. */
export const silentLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child() {
    return silentLogger;
  },
};
