/**
 * `sandbox.env` values by reference (contracts/secret-ref.ts): the worker resolves
 * `{secret_ref: name}` from `<UH_SECRETS_DIR>/<name>` just before the runtime starts, and the
 * producer refuses a value in clear under a secret-looking name (redact.ts SECRET_KEY) for a
 * queued mission, whose payload lives in Redis.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isSecretRef, type EnvValue } from './contracts/secret-ref.js';
import { invalidInput } from './errors.js';
import { SECRET_KEY } from './redact.js';

export interface ResolvedEnv {
  /** Every entry with its value: the references replaced by the secrets' contents. */
  env: Record<string, string>;
  /** The values read from secrets (scrubbed from everything the operation writes, whatever the name). */
  secrets: string[];
  /** The first reference that could not be resolved: the operation is blocked, nothing runs. */
  missing: { message: string; hint: string } | null;
}

/** A secret file's value: its content without one trailing newline (`echo s > file` writes one). */
function secretValue(text: string): string {
  return text.replace(/\r?\n$/, '');
}

export function resolveMissionEnv(
  env: Readonly<Record<string, EnvValue>>,
  secretsDir: string | null,
  read: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): ResolvedEnv {
  const out: ResolvedEnv = { env: {}, secrets: [], missing: null };
  for (const [name, value] of Object.entries(env)) {
    if (!isSecretRef(value)) {
      out.env[name] = value;
      continue;
    }
    const ref = value.secret_ref;
    if (!secretsDir) {
      out.missing = {
        message: `sandbox.env.${name}: secret "${ref}" cannot be resolved: this worker has no UH_SECRETS_DIR`,
        hint: `set UH_SECRETS_DIR on the worker (under its state dir, masked from sandboxes) and put the value in <dir>/${ref}`,
      };
      return out;
    }
    try {
      const secret = secretValue(read(join(secretsDir, ref)));
      out.env[name] = secret;
      out.secrets.push(secret);
    } catch (error) {
      // The dir is named by its variable: its path is scrubbed from receipts like every UH_*SECRET* value.
      const why = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      out.missing = {
        message: `sandbox.env.${name}: secret "${ref}" cannot be read from $UH_SECRETS_DIR/${ref} (${why})`,
        hint: `put the value in $UH_SECRETS_DIR/${ref} on every worker that serves this runtime`,
      };
      return out;
    }
  }
  return out;
}

/**
 * Refuses a mission bound for the queue that holds a secret-looking name's value in clear
 * (`sandbox.env.API_TOKEN: "…"`): it would be stored in the job payload, the record and the
 * `mission` artifact, and shown by bull-board. Exit 2, naming the field.
 */
export function assertNoClearSecrets(env: Readonly<Record<string, EnvValue>>): void {
  const clear = Object.entries(env).filter(([name, value]) => !isSecretRef(value) && SECRET_KEY.test(name));
  if (clear.length === 0) return;
  const [name] = clear[0] as [string, EnvValue];
  throw invalidInput(
    `sandbox.env.${name}: a secret-looking variable's value in clear would be stored in Redis (the job payload)`,
    [],
    `pass it by reference, ${name}: {secret_ref: <name>}, resolved by the worker from <UH_SECRETS_DIR>/<name> (docs/security.md); or pass the worker's own variable with env_passthrough`,
  );
}

const MASK = '[masked]';

/**
 * A copy of a job's data for display (bull-board): every string under a secret-looking key
 * (`sandbox.env.API_TOKEN`, `runtime_config_overrides.*.env.*_KEY`, `extra_headers`) masked,
 * `{secret_ref}` names kept. The producer refuses such values in clear; this covers jobs written
 * by anything else.
 */
export function maskSecretFields(value: unknown, under = false): unknown {
  if (typeof value === 'string') return under ? MASK : value;
  if (Array.isArray(value)) return value.map((v) => maskSecretFields(v, under));
  if (value === null || typeof value !== 'object') return value;
  if (isSecretRef(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, maskSecretFields(v, under || SECRET_KEY.test(k))]),
  );
}
