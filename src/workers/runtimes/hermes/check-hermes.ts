import type { AdapterCheckV1, CheckContextV1 } from '../../../shared/runtime/v1/index.js';
import { programNotFound, whichProgram } from '../../../shared/process/check-program.js';
import { captureOutput, compareSemver, parseSemver } from '../../../shared/process/capture-output.js';
import { parseHermesHelp } from './hermes-argv.js';
import { HERMES_MIN_VERSION, type HermesSettings } from './hermes-settings.js';

/**
 * `uh adapter check hermes`: the binary resolves, `hermes --version` is at least 0.14.0, and
 * `hermes chat --help` tells which output format a run will use. Never throws.
 */
export async function checkHermes(config: HermesSettings, ctx: CheckContextV1): Promise<AdapterCheckV1> {
  const env = { ...ctx.env, ...config.env };
  const found = whichProgram(config.binary, env);
  if (found === null)
    return programNotFound(config.binary, `install Hermes Agent >= ${HERMES_MIN_VERSION} or set runtime_config.binary`);
  const opts = { env, timeoutMs: 20_000, ...(ctx.signal ? { signal: ctx.signal } : {}) };
  const version = await captureOutput(ctx.spawn, { argv: [found, '--version'], ...opts });
  const v = parseSemver(`${version.stdout}\n${version.stderr}`);
  if (version.exitCode !== 0 || v === null) {
    const why =
      version.spawnError?.message ??
      (version.timedOut ? 'timed out' : `exited ${version.exitCode}, no version in its output`);
    return {
      ok: false,
      summary: `${found} --version failed`,
      errors: [why],
      hint: `run "${found} --version" by hand to see what is wrong`,
    };
  }
  if (compareSemver(v, HERMES_MIN_VERSION) < 0) {
    return {
      ok: false,
      summary: `hermes ${v} at ${found} is older than ${HERMES_MIN_VERSION}`,
      version: v,
      errors: [`hermes ${v} < ${HERMES_MIN_VERSION}`],
      hint: 'upgrade with "hermes update" (or pip install -U hermes-agent)',
    };
  }
  const help = await captureOutput(ctx.spawn, { argv: [found, 'chat', '--help'], ...opts });
  const features = parseHermesHelp(`${help.stdout}\n${help.stderr}`);
  const format = config.format === 'auto' ? (features.streamJson ? 'stream-json' : 'text') : config.format;
  const errors =
    config.format === 'stream-json' && !features.streamJson
      ? ['runtime_config.format is stream-json but this hermes has no --format stream-json']
      : [];
  return {
    ok: errors.length === 0,
    summary: `hermes ${v} at ${found} (${format} output)`,
    version: v,
    errors,
    ...(errors.length > 0 ? { hint: 'upgrade hermes or set runtime_config.format to auto' } : {}),
    details: { binary: found, stream_json: features.streamJson, query_file: features.queryFile, format },
  };
}
