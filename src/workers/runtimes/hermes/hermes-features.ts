/**
 * Detect what the installed `hermes chat` supports by reading its `--help` once per binary
 * (cached by resolved path and modification time, so an upgrade is noticed).
 */
import { statSync } from 'node:fs';
import type { SpawnGroup } from '../../../shared/process/spawn-group.js';
import { whichProgram } from '../../../shared/process/check-program.js';
import { captureOutput } from '../../../shared/process/capture-output.js';
import { parseHermesHelp, type HermesFeatures } from './hermes-argv.js';

const cache = new Map<string, HermesFeatures>();
const NONE: HermesFeatures = { streamJson: false, queryFile: false };

/** Features of `binary`; none when it cannot be run (the launch then reports why). */
export async function detectHermesFeatures(
  spawn: SpawnGroup,
  binary: string,
  env: Readonly<Record<string, string | undefined>>,
  signal?: AbortSignal,
): Promise<HermesFeatures> {
  const path = whichProgram(binary, env);
  if (path === null) return NONE;
  let key: string;
  try {
    key = `${path}@${statSync(path).mtimeMs}`;
  } catch {
    return NONE;
  }
  const hit = cache.get(key);
  if (hit) return hit;
  const help = await captureOutput(spawn, {
    argv: [path, 'chat', '--help'],
    env,
    timeoutMs: 20_000,
    ...(signal ? { signal } : {}),
  });
  if (help.exitCode !== 0) return NONE;
  const features = parseHermesHelp(`${help.stdout}\n${help.stderr}`);
  cache.set(key, features);
  return features;
}
