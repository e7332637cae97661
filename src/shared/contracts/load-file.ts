/**
 * Mission documents from disk or an HTTP body, bounded: regular files only, at most
 * LIMITS.missionBytes read, YAML aliases/keys/depth and JSON keys checked in linear time,
 * duplicate and prototype keys refused in both. Every refusal is invalid input naming the file.
 */
import { closeSync, constants, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { extname } from 'node:path';
import { isAlias, isMap, isScalar, isSeq, parseDocument, type Node } from 'yaml';
import { errorMessage, invalidInput, UhError } from '../errors.js';
import { jsonKeyProblem } from './json-keys.js';
import { FORBIDDEN_KEYS, LIMITS } from './input-limits.js';
import { formatPath } from './zod-issues.js';

export type DocumentFormat = 'json' | 'yaml';

function refuse(source: string, problem: string): UhError {
  return invalidInput(`${source}: ${problem}`);
}

/** Read at most LIMITS.missionBytes of a regular file (never a device, FIFO or directory). */
export function readBoundedFile(path: string, max: number = LIMITS.missionBytes): string {
  let fd: number;
  try {
    const kind = statSync(path);
    if (!kind.isFile()) throw refuse(path, 'not a regular file (a device, FIFO or directory is refused)');
    if (kind.size > max) throw refuse(path, `larger than ${max} bytes`);
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (error) {
    if (UhError.isInstance(error)) throw error;
    throw new UhError('not_found', `cannot read ${path}: ${errorMessage(error)}`, { hint: 'check the path' });
  }
  try {
    const opened = fstatSync(fd);
    if (!opened.isFile()) throw refuse(path, 'not a regular file');
    const read = readUpTo(fd, max + 1, Math.min(opened.size, max) + 1);
    if (read.bytes > max) throw refuse(path, `larger than ${max} bytes`);
    return read.buffer.subarray(0, read.bytes).toString('utf8');
  } finally {
    closeSync(fd);
  }
}

/**
 * Read `fd` to its end or `limit` bytes, into a buffer of the size it had when opened (`guess`),
 * grown to `limit` only if the file grew since: a mission is read without zeroing a megabyte.
 */
function readUpTo(fd: number, limit: number, guess: number): { buffer: Buffer; bytes: number } {
  let buffer = Buffer.allocUnsafe(guess);
  let bytes = 0;
  for (let n = 1; n > 0 && bytes < limit; bytes += n) {
    if (bytes === buffer.length) buffer = Buffer.concat([buffer], limit);
    n = readSync(fd, buffer, bytes, buffer.length - bytes, null);
  }
  return { buffer, bytes };
}

/** Walk a parsed YAML tree once: unique plain keys, no prototype keys, bounded keys and depth. */
function yamlTreeProblem(root: Node | null): string | null {
  let keys = 0;
  const walk = (node: unknown, path: (string | number)[]): string | null => {
    if (path.length > LIMITS.documentDepth)
      return `${formatPath(path)}: nested deeper than ${LIMITS.documentDepth} levels`;
    if (isSeq(node)) {
      for (let i = 0; i < node.items.length; i++) {
        const problem = walk(node.items[i], [...path, i]);
        if (problem) return problem;
      }
    } else if (isMap(node)) {
      const seen = new Set<string>();
      for (const pair of node.items) {
        if (!isScalar(pair.key) || isAlias(pair.key)) return `${formatPath(path)}: keys must be plain scalars`;
        const key = String(pair.key.value);
        const at = [...path, key];
        if (FORBIDDEN_KEYS.has(key)) return `${formatPath(at)}: key "${key}" is not allowed`;
        if (seen.has(key)) return `${formatPath(at)}: duplicate key "${key}"`;
        if (++keys > LIMITS.documentKeys)
          return `${formatPath(at)}: more than ${LIMITS.documentKeys} keys in the document`;
        seen.add(key);
        const problem = walk(pair.value, at);
        if (problem) return problem;
      }
    }
    return null;
  };
  return walk(root, []);
}

/** Key separators (`: `, `:` at a line end, `? `) in raw text: a cheap upper bound on mapping keys. */
function keySeparators(text: string): number {
  let count = 0;
  for (let i = text.indexOf(':'); i !== -1; i = text.indexOf(':', i + 1)) {
    const next = text.charCodeAt(i + 1);
    if (Number.isNaN(next) || next === 32 || next === 10 || next === 13 || next === 9) count++;
  }
  return count;
}

function parseYamlText(text: string, source: string): unknown {
  // Refuse a key flood before the parser spends seconds on it (the tree walk below counts exactly).
  if (keySeparators(text) > LIMITS.yamlKeySeparators)
    throw refuse(
      source,
      `more than ${LIMITS.yamlKeySeparators} "key: value" separators (mapping keys are limited to ${LIMITS.documentKeys})`,
    );
  // uniqueKeys off: the library's check is quadratic; yamlTreeProblem does it in one pass.
  const doc = parseDocument(text, { strict: true, uniqueKeys: false, prettyErrors: false });
  const first = doc.errors[0];
  if (first) throw invalidInput(`${source} is not valid YAML: ${first.message.split('\n')[0] ?? ''}`);
  const problem = yamlTreeProblem(doc.contents);
  if (problem) throw refuse(source, problem);
  try {
    return doc.toJS({ maxAliasCount: LIMITS.yamlAliases });
  } catch (error) {
    throw invalidInput(`${source} is not valid YAML: ${errorMessage(error).split('\n')[0] ?? ''}`);
  }
}

/** Parse mission text (a file's or an HTTP body's) with every document limit applied. */
export function parseDocumentText(text: string, format: DocumentFormat, source: string): unknown {
  if (Buffer.byteLength(text, 'utf8') > LIMITS.missionBytes)
    throw refuse(source, `larger than ${LIMITS.missionBytes} bytes`);
  if (format === 'yaml') return parseYamlText(text, source);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw invalidInput(`${source} is not valid JSON: ${errorMessage(error).split('\n')[0] ?? ''}`);
  }
  const problem = jsonKeyProblem(text);
  if (problem) throw refuse(source, problem);
  return value;
}

/** Read a YAML or JSON document; a missing file or a syntax error is invalid input naming the file. */
export function readDocument(path: string): unknown {
  const format: DocumentFormat = extname(path).toLowerCase() === '.json' ? 'json' : 'yaml';
  return parseDocumentText(readBoundedFile(path), format, path);
}
