import { createRequire } from 'node:module';

/** The logging seam: adapters and workers log through this, never `console`. */
export interface Logger {
  debug(obj: Record<string, unknown> | string, msg?: string): void;
  info(obj: Record<string, unknown> | string, msg?: string): void;
  warn(obj: Record<string, unknown> | string, msg?: string): void;
  error(obj: Record<string, unknown> | string, msg?: string): void;
  child(bindings: Record<string, unknown>): Logger;
}

const LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * A pino logger on stderr (stdout belongs to `--json` output), created on the first line that
 * passes the level, so a quiet CLI run never pays for pino's import. Secrets are scrubbed by
 * the caller through `redact()`; pino's redaction of well-known key names is a second net.
 */
/** `level` comes from the parsed config (UH_LOG_LEVEL, default warn). */
export function createLogger(level = 'warn', bindings: Record<string, unknown> = {}): Logger {
  const threshold = LEVELS.indexOf(level);
  if (threshold < 0 || level === 'silent') return silentLogger;
  let real: Logger | undefined;
  const get = (): Logger => {
    if (!real) {
      const { pino } = createRequire(import.meta.url)('pino') as typeof import('pino');
      real = (
        pino(
          {
            level,
            base: { pid: process.pid },
            redact: {
              paths: [
                '*.auth_token',
                '*.authorization',
                '*.Authorization',
                '*.api_key',
                '*.extra_headers',
                'headers.*',
              ],
              censor: '[redacted]',
            },
          },
          // Through process.stderr, synchronous on Linux, so a resident uh's served run logs to its client.
          { write: (line: string) => process.stderr.write(line) },
        ) as unknown as Logger
      ).child(bindings);
    }
    return real;
  };
  const at = (name: 'debug' | 'info' | 'warn' | 'error') => (obj: Record<string, unknown> | string, msg?: string) => {
    if (LEVELS.indexOf(name) >= threshold) get()[name](obj, msg);
  };
  return {
    debug: at('debug'),
    info: at('info'),
    warn: at('warn'),
    error: at('error'),
    child: (more) => createLogger(level, { ...bindings, ...more }),
  };
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
