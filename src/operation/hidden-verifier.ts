/**
 * Hidden verifiers (`verification_hidden`): a directory with a `test.sh`, read on the producer's
 * host into a bounded bundle that travels with the job (so a worker on another host has it), and
 * written by the worker next to the sandbox (never inside it) only for the verification phase,
 * after the agent finished and the diff was taken. The bundle's digest is part of the contract.
 *
 * Bundle rules: regular files only (a link or device is refused), at most 256 files and 2 MiB,
 * relative paths without `..`; `test.sh` must exist.
 */
import { chmodSync, lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { z } from 'zod';
import { digestOf } from '../shared/digest.js';
import { invalidInput, UhError } from '../shared/errors.js';
import { makeDir } from '../shared/fs/make-dir.js';

export const HIDDEN_MAX_FILES = 256;
export const HIDDEN_MAX_BYTES = 2 * 1024 * 1024;

export const HiddenBundleSchema = z.strictObject({
  digest: z.string(),
  files: z
    .array(
      z.strictObject({
        path: z.string().refine((p) => !p.startsWith('/') && !p.split('/').includes('..'), 'must stay inside'),
        executable: z.boolean(),
        content_b64: z.string(),
      }),
    )
    .max(HIDDEN_MAX_FILES),
});
export type HiddenBundle = z.infer<typeof HiddenBundleSchema>;

function bundleDigest(files: HiddenBundle['files']): string {
  return digestOf(files.map((f) => [f.path, f.executable, f.content_b64]));
}

function walk(root: string, dir: string, out: HiddenBundle['files'], budget: { bytes: number }): void {
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const st = lstatSync(path);
    const rel = relative(root, path);
    if (st.isDirectory()) {
      walk(root, path, out, budget);
      continue;
    }
    if (!st.isFile())
      throw invalidInput(`verification_hidden: ${rel} is not a regular file`, [], 'copy the file in place of the link');
    budget.bytes += st.size;
    if (out.length >= HIDDEN_MAX_FILES || budget.bytes > HIDDEN_MAX_BYTES)
      throw invalidInput(
        `verification_hidden: more than ${HIDDEN_MAX_FILES} files or ${HIDDEN_MAX_BYTES} bytes`,
        [],
        'keep the verifier small: large fixtures belong in the repository',
      );
    out.push({ path: rel, executable: (st.mode & 0o111) !== 0, content_b64: readFileSync(path).toString('base64') });
  }
}

/** Read the verifier directory on the producer's host (bad input: exit 2, nothing written). */
export function readHiddenVerifier(dir: string): HiddenBundle {
  let st;
  try {
    st = lstatSync(dir);
  } catch {
    throw invalidInput(`verification_hidden: ${dir} does not exist`, [], 'give the directory holding test.sh');
  }
  if (!st.isDirectory()) throw invalidInput(`verification_hidden: ${dir} is not a directory`);
  const files: HiddenBundle['files'] = [];
  walk(dir, dir, files, { bytes: 0 });
  if (!files.some((f) => f.path === 'test.sh'))
    throw invalidInput(`verification_hidden: ${dir} has no test.sh`, [], 'the verifier runs test.sh');
  return { digest: bundleDigest(files), files };
}

/** A bundle as received in a job: its digest must match its files (else the job is refused). */
export function checkHiddenBundle(value: unknown): HiddenBundle {
  const bundle = HiddenBundleSchema.parse(value);
  if (bundleDigest(bundle.files) !== bundle.digest)
    throw new UhError('conflict', 'the hidden verifier bundle does not match its digest', {
      hint: 'submit the mission again from the producer',
    });
  return bundle;
}

/** Write the bundle's files under `dir` (outside the sandbox). */
export function writeHiddenVerifier(bundle: HiddenBundle, dir: string): void {
  for (const f of bundle.files) {
    const path = join(dir, f.path);
    makeDir(dirname(path));
    writeFileSync(path, Buffer.from(f.content_b64, 'base64'));
    chmodSync(path, f.executable ? 0o755 : 0o644);
  }
}

/**
 * The reward the verifier wrote in its logs dir: `reward.txt` (a number) or `reward.json`
 * (`{"reward": x}`, else the first numeric value), clamped to 0..1; null when neither is there
 * or it is not a number.
 */
export function readReward(logsDir: string): number | null {
  const clamp = (v: number) => (Number.isFinite(v) ? Math.min(1, Math.max(0, v)) : null);
  try {
    const text = readFileSync(join(logsDir, 'reward.txt'), 'utf8').trim();
    if (text !== '' && !Number.isNaN(Number(text))) return clamp(Number(text));
  } catch {
    // no reward.txt
  }
  try {
    const json = JSON.parse(readFileSync(join(logsDir, 'reward.json'), 'utf8')) as unknown;
    if (typeof json === 'number') return clamp(json);
    if (json && typeof json === 'object') {
      const record = json as Record<string, unknown>;
      const value =
        typeof record.reward === 'number' ? record.reward : Object.values(record).find((v) => typeof v === 'number');
      return typeof value === 'number' ? clamp(value) : null;
    }
  } catch {
    // no reward.json
  }
  return null;
}
