import type { AdapterCheckV1, CheckContextV1 } from '../../../shared/runtime/v1/index.js';
import { programNotFound, whichProgram } from '../../../shared/process/check-program.js';
import { captureOutput, parseSemver } from '../../../shared/process/capture-output.js';
import type { PiSettings } from './pi-settings.js';

/**
 * `uh adapter check pi|oh-my-pi`: the binary resolves, `--version` answers, and `--help` offers
 * the JSON print mode this adapter drives (`--mode`, `--print`, `--no-session`). Never throws.
 */
export async function checkPi(
  variant: { id: string; install: string },
  config: PiSettings,
  ctx: CheckContextV1,
): Promise<AdapterCheckV1> {
  const env = { ...ctx.env, ...config.env, ...(config.offline ? { PI_OFFLINE: '1' } : {}) };
  const found = whichProgram(config.binary, env);
  if (found === null)
    return programNotFound(config.binary, `install it (${variant.install}) or set runtime_config.binary`);
  const opts = { env, ...(ctx.signal ? { signal: ctx.signal } : {}) };
  const version = await captureOutput(ctx.spawn, { argv: [found, '--version'], ...opts });
  if (version.exitCode !== 0) {
    const why =
      version.spawnError?.message ??
      (version.timedOut ? 'timed out' : `exited ${version.exitCode}: ${version.stderr.trim().slice(0, 300)}`);
    return {
      ok: false,
      summary: `${found} --version failed`,
      errors: [why],
      hint: `run "${found} --version" by hand to see what is wrong`,
    };
  }
  const v = parseSemver(`${version.stdout}\n${version.stderr}`);
  const help = await captureOutput(ctx.spawn, { argv: [found, '--help'], ...opts });
  const text = `${help.stdout}\n${help.stderr}`;
  const missing = ['--mode', '--print', '--no-session'].filter((flag) => !text.includes(flag));
  if (missing.length > 0) {
    return {
      ok: false,
      summary: `${found} lacks the JSON print mode`,
      ...(v ? { version: v } : {}),
      errors: [`--help does not mention ${missing.join(', ')}`],
      hint: `upgrade ${config.binary} (${variant.install})`,
    };
  }
  return {
    ok: true,
    summary: `${variant.id} ${v ?? '(unknown version)'} at ${found}`,
    ...(v ? { version: v } : {}),
    errors: [],
    details: { binary: found, prompt_via: config.prompt_via, offline: config.offline },
  };
}
