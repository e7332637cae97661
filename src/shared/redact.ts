/** Replace every occurrence of each secret in strings found anywhere in a value. Pure. */
import { nameMatches, NEVER_PASSED } from './host-policy.js';

export const REDACTED = '[redacted]';

export function redactString(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret.length < 4) continue; // too short to be a secret, too likely to mangle text
    if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  }
  return out;
}

export function redact<T>(value: T, secrets: readonly string[]): T {
  if (secrets.length === 0) return value;
  return walk(value, secrets) as T;
}

function walk(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return redactString(value, secrets);
  if (Array.isArray(value)) return value.map((v) => walk(v, secrets));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = walk(v, secrets);
    return out;
  }
  return value;
}

/**
 * The one rule for "this name holds a secret", for environment variable names, config keys and
 * header names alike (`OPENAI_API_KEY`, `GH_TOKEN`, `model_providers.x.http_headers`).
 */
export const SECRET_KEY = /(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|AUTH|CREDENTIAL|PRIVATE|BEARER|HEADERS)/i;

/** Values of environment entries whose names look secret (`OPENAI_API_KEY`, `GH_TOKEN`). */
export function secretEnvValues(env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (value && SECRET_KEY.test(key)) out.push(value);
  }
  return out;
}

/** The password of a URL (`redis://:pw@host`), when it has one. */
function urlPassword(text: string): string[] {
  try {
    const url = new URL(text);
    return url.password ? [...new Set([decodeURIComponent(url.password), url.password])] : [];
  } catch {
    return [];
  }
}

/**
 * Secrets of the worker itself, scrubbed from everything an operation writes even though no
 * agent is ever given them: among uh's own variables (NEVER_PASSED: `UH_*`, `REDIS_*`, `GH_TOKEN`…)
 * every secret-looking value (`UH_API_TOKEN`, `UH_WEBHOOK_SECRET`), `UH_RECEIPT_KEY`, and the
 * password of any URL (`REDIS_URL=redis://:pw@…`). Values under 8 characters are left out.
 */
export function hostSecretValues(env: Readonly<Record<string, string | undefined>>): string[] {
  const out: string[] = [];
  for (const [key, value] of Object.entries(env)) {
    if (!value || !NEVER_PASSED.some((p) => nameMatches(key, p))) continue;
    if (SECRET_KEY.test(key) || key === 'UH_RECEIPT_KEY') out.push(value);
    out.push(...urlPassword(value));
  }
  return [...new Set(out.filter((s) => s.length >= 8))];
}

/** Secrets worth scrubbing (at least 4 characters), longest first so a longer one wins at a position. */
function usable(secrets: readonly string[]): string[] {
  return [...new Set(secrets.filter((s) => s.length >= 4))].sort((a, b) => b.length - a.length);
}

/**
 * A redactor for a stream cut into arbitrary chunks: a secret split across two chunks is still
 * replaced. It holds back at most `max(secret length) - 1` characters between chunks (emitted by
 * `end()`), so memory stays bounded whatever the stream's size. For bytes, feed `latin1` strings
 * (see `scrubBytes`): each byte is one character, so nothing is lost or re-encoded.
 */
export class StreamRedactor {
  private readonly secrets: string[];
  private readonly hold: number;
  private held = '';

  constructor(secrets: readonly string[]) {
    this.secrets = usable(secrets);
    this.hold = Math.max(0, ...this.secrets.map((s) => s.length)) - 1;
  }

  /** Text safe to emit now: every secret that starts in it is replaced. */
  push(chunk: string): string {
    if (this.secrets.length === 0) return chunk;
    const text = this.held + chunk;
    const boundary = text.length - this.hold;
    let out = '';
    let at = 0;
    for (;;) {
      const hit = this.nextHit(text, at);
      if (!hit || hit.index >= boundary) break;
      out += text.slice(at, hit.index) + REDACTED;
      at = hit.index + hit.length;
    }
    const keepFrom = Math.max(at, boundary);
    out += text.slice(at, keepFrom);
    this.held = text.slice(keepFrom);
    return out;
  }

  /** The held-back tail, scrubbed (no secret can complete any more). */
  end(): string {
    const rest = this.held;
    this.held = '';
    return redactString(rest, this.secrets);
  }

  /** The leftmost occurrence of any secret from `from`, the longest at that position. */
  private nextHit(text: string, from: number): { index: number; length: number } | null {
    let best: { index: number; length: number } | null = null;
    for (const secret of this.secrets) {
      const index = text.indexOf(secret, from);
      if (index >= 0 && (best === null || index < best.index)) best = { index, length: secret.length };
    }
    return best;
  }
}

/** A byte-level redactor: the secrets' UTF-8 bytes are found whatever the chunking of the stream. */
export function byteRedactor(secrets: readonly string[]): {
  push(chunk: Buffer): Buffer;
  end(): Buffer;
  active: boolean;
} {
  const inner = new StreamRedactor(secrets.map((s) => Buffer.from(s, 'utf8').toString('latin1')));
  return {
    active: usable(secrets).length > 0,
    push: (chunk) => Buffer.from(inner.push(chunk.toString('latin1')), 'latin1'),
    end: () => Buffer.from(inner.end(), 'latin1'),
  };
}
