/**
 * `uh adapter check codex`: run `<binary> --version` (bounded time) and report the version.
 * Never throws.
 */
import { tmpdir } from 'node:os';
import type { AdapterCheckV1, CheckContextV1 } from '../../../shared/runtime/v1/index.js';

const INSTALL_HINT =
  "install codex: npm i -g @openai/codex (on PATH), or set runtime_config.binary to its path (a checkout's pinned one: .cache/runtimes/node_modules/.bin/codex after bash scripts/install-real-runtimes.sh)";

/** `codex-cli 0.171.0` → `0.171.0`. */
export function parseCodexVersion(text: string): string | null {
  return /\b(\d+\.\d+\.\d+(?:[-+][\w.]+)?)\b/.exec(text)?.[1] ?? null;
}

export async function checkCodex(
  binary: string,
  env: Readonly<Record<string, string | undefined>>,
  ctx: CheckContextV1,
): Promise<AdapterCheckV1> {
  try {
    const child = ctx.spawn({
      argv: [binary, '--version'],
      cwd: tmpdir(),
      env,
      stdout: 'pipe',
      stderr: 'ignore',
      timeoutMs: 10_000,
      killGraceMs: 500,
      ...(ctx.signal ? { signal: ctx.signal } : {}),
    });
    let out = '';
    if (child.stdout) {
      for await (const chunk of child.stdout as AsyncIterable<Buffer>) {
        if (out.length < 4096) out += chunk.toString('utf8');
      }
    }
    const result = await child.result;
    if (result.spawnError) {
      return {
        ok: false,
        summary: `codex not found: ${binary}`,
        errors: [`${binary}: ${result.spawnError.code} ${result.spawnError.message}`],
        hint: INSTALL_HINT,
      };
    }
    const version = parseCodexVersion(out);
    if (result.exitCode !== 0 || version === null) {
      const why = result.timedOut ? 'timed out' : `exited ${result.exitCode ?? result.signal}`;
      return {
        ok: false,
        summary: `${binary} --version ${why}`,
        errors: [out.trim().slice(0, 300) || why],
        hint: INSTALL_HINT,
      };
    }
    return {
      ok: true,
      summary: `codex ${version} at ${binary}`,
      version,
      errors: [],
      details: { version_output: out.trim() },
    };
  } catch (error) {
    return { ok: false, summary: `cannot run ${binary}`, errors: [String(error)], hint: INSTALL_HINT };
  }
}
