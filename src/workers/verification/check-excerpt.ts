/**
 * The head and tail of a check's log for the receipt, so a host without the worker's disk (a CI
 * runner) sees why a check failed. Reads the capped log once, scrubs secrets from it in place
 * (the log also travels as an artifact), and cuts at most `bytes` from each end at line
 * boundaries when it can. The tail is empty when the head already holds the whole log.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { redactString } from '../../shared/redact.js';

export const CHECK_EXCERPT_BYTES = 4 * 1024;

export interface CheckExcerpt {
  head: string;
  tail: string;
}

export function excerptCheckLog(path: string, secrets: readonly string[], bytes = CHECK_EXCERPT_BYTES): CheckExcerpt {
  const raw = readFileSync(path, 'utf8');
  const text = redactString(raw, secrets);
  if (text !== raw) writeFileSync(path, text);
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= bytes) return { head: text, tail: '' };
  let headEnd = buf.lastIndexOf(0x0a, bytes - 1);
  headEnd = headEnd > bytes / 2 ? headEnd + 1 : bytes;
  let tailStart = buf.indexOf(0x0a, buf.length - bytes);
  tailStart = tailStart >= 0 && tailStart < buf.length - bytes / 2 ? tailStart + 1 : buf.length - bytes;
  if (tailStart < headEnd) tailStart = headEnd;
  // toString on a cut multi-byte sequence yields U+FFFD, never a throw: acceptable at the edges.
  return { head: buf.subarray(0, headEnd).toString('utf8'), tail: buf.subarray(tailStart).toString('utf8') };
}
