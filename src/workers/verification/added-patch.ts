/**
 * The patch of a change that only adds files, in process: byte for byte what
 * `git diff-tree -r --no-ext-diff --no-textconv --binary --full-index -M --patch-with-raw` prints
 * after its raw records when every change is a new text file (no deletion, so `-M` pairs nothing,
 * and a new file's hunk is all of it). The diff capture uses it after staging in process, so a
 * mission that creates a few files costs no git process for its patch.
 *
 * Null when a file is one git would print otherwise: not a regular file (a symlink, a gitlink),
 * content with a NUL byte (git's binary rule looks at the first 8,000 bytes; any NUL is refused
 * here), a path with a byte git quotes (the caller stages only plain names). Pure.
 */
import { MODE_EXEC, MODE_FILE } from '../sandbox/index-file.js';

export interface AddedFile {
  /** The path as git prints it (plain ASCII). */
  path: string;
  mode: number;
  /** The blob's object id. */
  id: Buffer;
  body: Buffer;
}

/** A path git prints unquoted (`core.quotePath` quotes control bytes, `"`, `\` and non-ASCII). */
const UNQUOTED = /^[\x20-\x21\x23-\x5b\x5d-\x7e]+$/;

/** The patch of `files`, in the order given (git's: by path), or null (see the module comment). */
export function addedFilesPatch(files: readonly AddedFile[]): Buffer | null {
  const parts: Buffer[] = [];
  for (const file of files) {
    const part = addedFilePatch(file);
    if (part === null) return null;
    parts.push(part);
  }
  return Buffer.concat(parts);
}

function addedFilePatch({ path, mode, id, body }: AddedFile): Buffer | null {
  if ((mode !== MODE_FILE && mode !== MODE_EXEC) || !UNQUOTED.test(path) || body.includes(0)) return null;
  const header = [
    `diff --git a/${path} b/${path}`,
    `new file mode ${mode.toString(8)}`,
    `index ${'0'.repeat(id.length * 2)}..${id.toString('hex')}`,
  ];
  if (body.length === 0) return Buffer.from(`${header.join('\n')}\n`);
  const complete = body[body.length - 1] === 0x0a;
  const text = body.toString('latin1');
  const lines = (complete ? text.slice(0, -1) : text).split('\n');
  const hunk = `@@ -0,0 +1${lines.length === 1 ? '' : `,${lines.length}`} @@`;
  const out = [...header, '--- /dev/null', `+++ b/${path}`, hunk, ...lines.map((line) => `+${line}`)];
  if (!complete) out.push('\\ No newline at end of file');
  return Buffer.from(`${out.join('\n')}\n`, 'latin1');
}
