/**
 * Shared CLI plumbing: argument parsing with node's parseArgs, help text, the state dir, and
 * the one error printer (one line naming the field or file, then the hint; exit code by kind).
 */
import { execFileSync } from 'node:child_process';
import { resolve, join } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { redisUrlFor, type UhConfig } from '../../shared/config.js';
import { terminalText } from '../../shared/terminal-text.js';
import { EXIT } from '../../shared/contracts/exit-codes.js';
import { errorMessage, UhError, invalidInput } from '../../shared/errors.js';

export interface CommandSpec {
  usage: string;
  summary: string;
  options: NonNullable<ParseArgsConfig['options']>;
  examples: string[];
  /** Extra lines for --help. */
  details?: string[];
}

export const COMMON_OPTIONS = {
  json: { type: 'boolean' as const, default: false },
  help: { type: 'boolean' as const, short: 'h', default: false },
  'state-dir': { type: 'string' as const },
};

export function helpText(spec: CommandSpec): string {
  const lines = [`usage: ${spec.usage}`, '', spec.summary, ''];
  const opts = Object.entries(spec.options).map(
    ([name, o]) => `  --${name}${o.type === 'string' ? ' <value>' : ''}${o.short ? `, -${o.short}` : ''}`,
  );
  if (opts.length > 0) lines.push('options:', ...opts, '');
  if (spec.details) lines.push(...spec.details, '');
  lines.push('examples:', ...spec.examples.map((e) => `  ${e}`));
  return lines.join('\n');
}

export function parseCommand(spec: CommandSpec, argv: string[]) {
  try {
    return parseArgs({ args: argv, options: spec.options, allowPositionals: true, strict: true });
  } catch (error) {
    throw invalidInput(
      errorMessage(error).split('\n')[0] ?? 'bad arguments',
      [],
      `see: ${spec.usage.split(' ').slice(0, 3).join(' ')} --help`,
    );
  }
}

/** A command: its arguments and the configuration the entry point parsed once. */
export type Handler = (argv: string[], config: UhConfig, cli: CliSelf) => Promise<number>;

/** What the entry point lends a command: running another command line in this process. */
export interface CliSelf {
  run(argv: string[]): Promise<number>;
}

/** `--state-dir`, else `UH_STATE_DIR` (config.core.stateDir), else `.harness/` at the invoking repository's root. */
export function resolveStateDir(flag: string | undefined, config: UhConfig): string {
  if (flag) return resolve(flag);
  if (config.core.stateDir) return resolve(config.core.stateDir);
  try {
    const top = execFileSync('git', ['rev-parse', '--show-toplevel'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    if (top) return join(top, '.harness');
  } catch {
    // not in a git repository
  }
  return resolve('.harness');
}

/**
 * The Redis URL of a queue command: `--redis`, else `REDIS_URL`, else redis://127.0.0.1:6379,
 * and then it says so on stderr (never on stdout, which belongs to --json).
 */
export function queueRedisUrl(config: UhConfig, flag: unknown): string {
  const { url, defaulted } = redisUrlFor(config.queue, typeof flag === 'string' ? flag : undefined);
  if (defaulted) process.stderr.write(`uh: REDIS_URL not set; using ${url}\n`);
  return url;
}

export function exitCodeForError(error: unknown): number {
  if (UhError.isInstance(error)) {
    switch (error.kind) {
      case 'invalid_input':
      case 'conflict':
      case 'unsupported_capability':
      case 'not_found':
        return EXIT.invalid;
      case 'runtime_unavailable':
      case 'push_rejected':
        return EXIT.blocked;
      case 'untrusted_receipt':
        return EXIT.tampered;
      default:
        return EXIT.failed;
    }
  }
  return EXIT.failed;
}

export function printError(error: unknown, json: boolean, debug = false): number {
  const code = exitCodeForError(error);
  if (json) {
    const body = UhError.isInstance(error)
      ? {
          error: {
            kind: error.kind,
            name: error.name,
            message: error.message,
            details: error.details,
            hint: error.hint ?? null,
          },
        }
      : { error: { kind: 'internal', message: errorMessage(error) } };
    process.stdout.write(`${JSON.stringify(body)}\n`);
  }
  process.stderr.write(
    `${errorLines(error, debug)
      .map((l) => terminalText(l, { oneLine: true }))
      .join('\n')}\n`,
  );
  return code;
}

/** An error with at most one problem is one line (naming the field); otherwise message, details, hint. */
export function errorLines(error: unknown, debug = false): string[] {
  if (UhError.isInstance(error) && error.details.length <= 1) {
    const detail = error.details[0];
    return [
      `uh: ${detail === undefined ? error.message : `${error.message.replace(/: 1 problem$/, '')}: ${detail}`}${error.hint ? ` (hint: ${error.hint})` : ''}`,
    ];
  }
  const lines = [`uh: ${errorMessage(error)}`];
  if (UhError.isInstance(error)) {
    for (const detail of error.details) lines.push(`  ${detail}`);
    if (error.hint) lines.push(`hint: ${error.hint}`);
  } else if (error instanceof Error && debug) lines.push(...(error.stack ?? '').split('\n'));
  return lines;
}

export function writeJson(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}
