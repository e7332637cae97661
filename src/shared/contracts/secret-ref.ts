import { z } from 'zod';

/**
 * A value passed by reference (docs/security.md, "Secrets in missions"): `{secret_ref: name}` in
 * `sandbox.env` names the file `<UH_SECRETS_DIR>/<name>` on the worker, which the worker reads
 * just before the runtime starts. Only the name travels: the job payload, the record, the
 * `mission` artifact, bull-board and the API never hold the value.
 */
export const SecretNameSchema = z
  .string()
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
    "must be a secret name: letters, digits, . _ - (a file in the worker's UH_SECRETS_DIR)",
  );

export const SecretRefSchema = z.strictObject({ secret_ref: SecretNameSchema });
export type SecretRef = z.infer<typeof SecretRefSchema>;

/** A `sandbox.env` value: given in clear, or by reference to a worker-side secret. */
export type EnvValue = string | SecretRef;

export function isSecretRef(value: unknown): value is SecretRef {
  return typeof value === 'object' && value !== null && typeof (value as SecretRef).secret_ref === 'string';
}
