/** Replace every occurrence of each secret in strings found anywhere in a value. Pure. */
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
