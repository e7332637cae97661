/**
 * The commit the agent's own `.git` says it is on (it may have committed), read by uh without
 * running git: the agent wrote that directory, so it is read as hostile input. Only regular files
 * (no symlink, FIFO or device: a FIFO would block a read), each read bounded, never a path that
 * leaves the agent's git dir. `HEAD` is a commit id, or `ref: refs/…` resolved through the loose
 * ref file or `packed-refs` (a few levels of symbolic refs at most). Anything else (a gitfile, a
 * `commondir`, reftable, an odd name or content) gives null: the head commit is a fact the
 * receipt reports, never something the diff or the scope check relies on.
 */
import { lstatSync, realpathSync } from 'node:fs';
import { join, sep } from 'node:path';
import { readRegularFile } from './read-regular.js';

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** A ref name we follow: `refs/` then plain components (git allows more; those give null). */
const REF = /^refs\/(?:[A-Za-z0-9_+=@-][A-Za-z0-9._+=@-]*\/)*[A-Za-z0-9_+=@-][A-Za-z0-9._+=@-]*$/;
const MAX_REF_BYTES = 4096;
const MAX_PACKED_REFS_BYTES = 8 * 1024 * 1024;
const MAX_SYMREF_DEPTH = 5;

export function readAgentHead(agentGitDir: string): string | null {
  let root: string;
  try {
    if (!lstatSync(agentGitDir).isDirectory()) return null;
    root = realpathSync(agentGitDir);
  } catch {
    return null;
  }
  let name = 'HEAD';
  for (let depth = 0; depth <= MAX_SYMREF_DEPTH; depth += 1) {
    const text = readSmallFile(root, name, MAX_REF_BYTES);
    const value = text === null ? (name === 'HEAD' ? null : packedRef(root, name)) : text.replace(/\n$/, '');
    if (value === null) return null;
    if (SHA.test(value)) return value;
    const target = /^ref: (.+)$/.exec(value)?.[1];
    if (!target || !REF.test(target) || target.split('/').some((part) => part.endsWith('.lock') || part.includes('..')))
      return null;
    name = target;
  }
  return null;
}

/** A ref's commit from `packed-refs` (`<sha> <name>` lines), or null. */
function packedRef(root: string, name: string): string | null {
  const text = readSmallFile(root, 'packed-refs', MAX_PACKED_REFS_BYTES);
  if (text === null) return null;
  for (const line of text.split('\n')) {
    const space = line.indexOf(' ');
    if (space > 0 && line.slice(space + 1) === name) {
      const sha = line.slice(0, space);
      return SHA.test(sha) ? sha : null;
    }
  }
  return null;
}

/** A regular file under `root` (its real path inside `root`), at most `max` bytes, as text; else null. */
function readSmallFile(root: string, name: string, max: number): string | null {
  let real: string;
  try {
    real = realpathSync(join(root, name));
  } catch {
    return null;
  }
  if (!real.startsWith(root + sep)) return null;
  return readRegularFile(real, max)?.body.toString('utf8') ?? null;
}
