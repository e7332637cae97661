import { readFileSync } from 'node:fs';
import { extname } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { errorMessage, invalidInput, UhError } from '../errors.js';

/** Read a YAML or JSON document; a missing file or a syntax error is invalid input naming the file. */
export function readDocument(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new UhError('not_found', `cannot read ${path}: ${errorMessage(error)}`, { hint: 'check the path' });
  }
  try {
    if (extname(path).toLowerCase() === '.json') return JSON.parse(text);
    return parseYaml(text, { strict: true, uniqueKeys: true });
  } catch (error) {
    throw invalidInput(`${path} is not valid ${extname(path).toLowerCase() === '.json' ? 'JSON' : 'YAML'}`, [errorMessage(error).split('\n')[0] ?? '']);
  }
}
