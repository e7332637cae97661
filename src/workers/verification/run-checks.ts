/**
 * Verification checks: argv only, run in the sandbox one after another, each with its own
 * timeout that kills the whole process group. stdout and stderr are captured together into a
 * capped log; the receipt keeps argv, exit, duration, timed_out, the digest of that log and its
 * head and tail (secrets scrubbed, see check-excerpt.ts).
 */
import { join } from 'node:path';
import type { Check } from '../../shared/contracts/mission.js';
import type { CheckResult } from '../../shared/contracts/receipt.js';
import type { SpawnGroup } from '../../shared/process/spawn-group.js';
import { byteRedactor } from '../../shared/redact.js';
import { CappedFile } from './capped-file.js';
import { excerptCheckLog } from './check-excerpt.js';

export const CHECK_OUTPUT_CAP_BYTES = 1024 * 1024;

export interface RunChecksOptions {
  checks: readonly Check[];
  workDir: string;
  logDir: string;
  env: Readonly<Record<string, string | undefined>>;
  spawn: SpawnGroup;
  /** Values scrubbed from each log (even split across chunks: one redactor per stream) and its excerpts. */
  secrets?: readonly string[];
  signal?: AbortSignal;
  capBytes?: number;
  onResult?: (result: CheckResult) => void;
}

export async function runChecks(options: RunChecksOptions): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  for (const check of options.checks) {
    if (options.signal?.aborted) break;
    const logPath = join(options.logDir, `check-${check.name}.log`);
    const log = new CappedFile(logPath, options.capBytes ?? CHECK_OUTPUT_CAP_BYTES);
    const child = options.spawn({
      argv: check.argv,
      cwd: options.workDir,
      env: options.env,
      stdin: 'ignore',
      stdout: 'pipe',
      stderr: 'pipe',
      timeoutMs: check.timeout_seconds * 1000,
      killGraceMs: 2000,
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const streams = [child.stdout, child.stderr].map((stream) => {
      const scrub = byteRedactor(options.secrets ?? []);
      stream?.on('data', (chunk: Buffer) => log.write(scrub.push(chunk)));
      return scrub;
    });
    const exit = await child.result;
    for (const scrub of streams) log.write(scrub.end());
    if (exit.spawnError) log.write(Buffer.from(`uh: cannot start ${check.argv[0]}: ${exit.spawnError.message}\n`));
    const captured = log.close();
    const excerpt = excerptCheckLog(logPath, options.secrets ?? []);
    const result: CheckResult = {
      name: check.name,
      argv: [...check.argv],
      exit_code: exit.exitCode,
      signal: exit.signal,
      duration_ms: Math.round(exit.durationMs),
      timed_out: exit.timedOut,
      passed: exit.exitCode === 0 && !exit.timedOut && !exit.aborted,
      output_bytes: captured.bytesTotal,
      output_truncated: captured.truncated,
      output_digest: captured.digest,
      log: logPath,
      output_head: excerpt.head,
      output_tail: excerpt.tail,
    };
    results.push(result);
    options.onResult?.(result);
  }
  return results;
}
