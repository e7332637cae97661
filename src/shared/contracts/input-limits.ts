/**
 * Every size limit on mission input, in one table (docs/security.md "Input limits" lists them).
 * Checked in the contract layer, so the CLI, the HTTP API and queue payloads refuse the same input.
 */
export const LIMITS = {
  /** A mission file or HTTP body, in bytes. */
  missionBytes: 1024 * 1024,
  /** Mapping keys in one document (all levels together). */
  documentKeys: 5_000,
  /** `key: value` separators in YAML text, counted before parsing (a quick bound on keys; text may hold some). */
  yamlKeySeparators: 10_000,
  /** Nesting depth of maps and lists. */
  documentDepth: 64,
  /** YAML alias nodes in one document (the `yaml` library's expansion guard). */
  yamlAliases: 100,
  /** Characters of one glob, and globs in one list. */
  globChars: 1024,
  globsPerList: 1000,
  /** Free text. */
  titleChars: 200,
  objectiveChars: 64 * 1024,
  notesChars: 64 * 1024,
  /** repository.url and repository.ref. */
  urlChars: 2048,
  refChars: 255,
  /** Verification checks and their argv. */
  checks: 100,
  argvItems: 256,
  argvItemChars: 4096,
  /** sandbox.env and labels. */
  envEntries: 100,
  envValueChars: 8 * 1024,
  labels: 64,
  labelKeyChars: 128,
  labelValueChars: 1024,
  /** Runtimes in one mission's list. */
  runtimes: 32,
  /** Bytes kept of each runtime/check stdout or stderr log; a marker line notes the cut. */
  logBytes: 64 * 1024 * 1024,
} as const;

/** Keys that would reach an object's prototype in some consumer: refused at any depth. */
export const FORBIDDEN_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);
