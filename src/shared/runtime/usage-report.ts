/**
 * The usage channel any agent may use (docs/runtimes/command.md "Usage"): a fenced block tagged
 * `uh-runtime-usage` on its stdout (the last complete one counts), or the JSON file named by
 * `$UH_USAGE_FILE` (the file wins when both hold a valid report). The agent is hostile code: a
 * report is at most USAGE_MAX_BYTES, parsed with zod (unknown keys dropped), and a report that does
 * not parse is ignored with a note naming why, never its content. It fills the receipt's `usage`
 * and the runtime's `model` and `version`; it never touches the outcome or the verdict.
 *
 * ```uh-runtime-usage
 * {"input_tokens": 1200, "cached_input_tokens": 200, "output_tokens": 340, "model": "gpt-5-mini"}
 * ```
 */
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { z } from 'zod';
import type { Usage } from '../contracts/runtime-result.js';
import { SentinelScanner } from '../sentinel.js';

export const USAGE_TAG = 'uh-runtime-usage';
/** The most a usage report may hold (block content or file); a larger one is ignored. */
export const USAGE_MAX_BYTES = 4096;
/** The file the `command` runtime names in `$UH_USAGE_FILE`, in the operation's log dir. */
export const USAGE_FILE = 'runtime-usage.json';

const tokens = z.number().int().nonnegative().max(1e12);

/** Built on first use, as the other contracts. */
const UsageReportSchema = z.lazy(() =>
  z.object({
    input_tokens: tokens.optional(),
    cached_input_tokens: tokens.optional(),
    output_tokens: tokens.optional(),
    reasoning_tokens: tokens.optional(),
    total_tokens: tokens.optional(),
    cost_usd: z.number().nonnegative().max(1e6).optional(),
    /** A model name as price tables key it (`gpt-5-mini`, `qwen2.5-coder:7b`, `openai/gpt-4o`). */
    model: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._:/@+-]{0,127}$/)
      .optional(),
    /** The agent's own version (`1.4.2`, `2026.11.0-beta+3`). */
    version: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$/)
      .optional(),
  }),
);

export interface UsageReport {
  usage: Usage;
  model: string | null;
  version: string | null;
}

export type UsageRead = { report: UsageReport } | { problem: string } | null;

const USAGE_KEYS = ['input_tokens', 'cached_input_tokens', 'output_tokens', 'reasoning_tokens', 'total_tokens'];

/** Parse one report's text; `source` names it in the problem (`stdout block`, `$UH_USAGE_FILE`). */
export function parseUsageReport(text: string, source: string): UsageRead {
  if (text.trim() === '') return null;
  if (Buffer.byteLength(text) > USAGE_MAX_BYTES) return { problem: `${source}: over ${USAGE_MAX_BYTES} bytes` };
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { problem: `${source}: not JSON` };
  }
  const parsed = UsageReportSchema.safeParse(json);
  if (!parsed.success) {
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join('.') || '(the report)'))];
    return { problem: `${source}: invalid ${fields.join(', ')}` };
  }
  const { model, version, ...numbers } = parsed.data;
  const usage: Usage = {};
  for (const key of [...USAGE_KEYS, 'cost_usd'] as const) {
    const v = numbers[key as keyof typeof numbers];
    if (v !== undefined) usage[key as keyof Usage] = v;
  }
  if (Object.keys(usage).length === 0 && model === undefined && version === undefined)
    return { problem: `${source}: no usage field` };
  return { report: { usage, model: model ?? null, version: version ?? null } };
}

/** A streaming scanner of the usage block (bounded like the final-message sentinel). */
export function usageScanner(): SentinelScanner {
  return new SentinelScanner(USAGE_TAG, USAGE_MAX_BYTES + 1);
}

/**
 * The usage file's text, at most USAGE_MAX_BYTES + 1 bytes read (so an over-long file is seen as
 * such), never through a symlink the agent planted; '' when it is missing or not a regular file.
 */
export function readUsageFile(path: string): string {
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return '';
  }
  try {
    if (!fstatSync(fd).isFile()) return '';
    const buf = Buffer.alloc(USAGE_MAX_BYTES + 1);
    const n = readSync(fd, buf, 0, buf.length, 0);
    return buf.subarray(0, n).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/** The file's report when it holds a valid one, else the stdout block's; every problem named. */
export function pickUsageReport(
  block: string | null,
  fileText: string,
): { report: UsageReport | null; problems: string[] } {
  const file = parseUsageReport(fileText, '$UH_USAGE_FILE');
  const stdout = block === null ? null : parseUsageReport(block, `${USAGE_TAG} block`);
  const problems = [file, stdout].flatMap((r) => (r && 'problem' in r ? [r.problem] : []));
  const report = file && 'report' in file ? file.report : stdout && 'report' in stdout ? stdout.report : null;
  return { report, problems };
}
