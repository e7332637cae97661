/**
 * `uh doctor`'s receipt-key findings: which key this host signs with, whether a sandbox could
 * read it, what this host verifies with, and (with a fleet) whether the live workers all sign
 * with one key this host knows. None is core: receipts never stop a run, they stop its belief.
 */
import { isAbsolute, relative } from 'node:path';
import type { UhConfig } from '../../shared/config.js';
import { errorMessage } from '../../shared/errors.js';
import type { Heartbeat } from '../../shared/queue/live-workers.js';
import { loadKeyring, loadReceiptKey, type Keyring } from '../../operation/receipt-keys.js';

export interface DoctorFinding {
  what: string;
  ok: boolean;
  detail: string;
  hint?: string;
  core: boolean;
}

const SIGNING = 'receipt signing key';
const VERIFYING = 'receipt verification';

const inside = (path: string, dir: string) => {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

function signingFinding(config: UhConfig, stateDir: string): DoctorFinding {
  const r = config.receipts;
  if (r.signer === 'hmac') {
    return {
      what: SIGNING,
      ok: false,
      detail: 'HMAC (UH_RECEIPT_KEY / UH_RECEIPT_KEY_FILE): only a holder of the secret verifies, and it can sign too',
      hint: 'for a fleet: uh receipt key --generate <dir>, then UH_RECEIPT_SIGNING_KEY_FILE on the workers',
      core: false,
    };
  }
  const key = loadReceiptKey(r, false);
  if (!key)
    return {
      what: SIGNING,
      ok: true,
      detail: `none yet: ${r.signingKeyFile} is made on the first signed receipt`,
      core: false,
    };
  const where = r.signingKey !== undefined ? 'UH_RECEIPT_SIGNING_KEY' : r.signingKeyFile;
  const masked =
    r.signingKey !== undefined || [config.core.cacheDir, stateDir].some((d) => inside(r.signingKeyFile, d));
  if (masked) return { what: SIGNING, ok: true, detail: `Ed25519 key ${key.id} (${where})`, core: false };
  return {
    what: SIGNING,
    ok: false,
    detail: `Ed25519 key ${key.id} in ${where}, outside the state and cache dirs: a sandbox may read it`,
    hint: 'move it under UH_STATE_DIR or UH_CACHE_DIR (masked from every sandbox; docs/security.md)',
    core: false,
  };
}

function keyringFinding(config: UhConfig): { finding: DoctorFinding; keyring: Keyring | null } {
  let keyring: Keyring;
  try {
    keyring = loadKeyring(config.receipts);
  } catch (error) {
    return {
      finding: {
        what: VERIFYING,
        ok: false,
        detail: errorMessage(error),
        hint: 'fix UH_RECEIPT_PUBLIC_KEYS',
        core: false,
      },
      keyring: null,
    };
  }
  const ids = [...keyring.publicKeys.keys()];
  const hmac = keyring.secrets.size > 0;
  const detail =
    ids.length > 0
      ? `public key(s) ${ids.join(', ')}${hmac ? " + this host's HMAC key" : ''}`
      : hmac
        ? "this host's HMAC key only"
        : 'no key: a signed receipt cannot be verified here';
  const hint = "set UH_RECEIPT_PUBLIC_KEYS to the fleet's public key(s)";
  return { finding: { what: VERIFYING, ok: ids.length > 0 || hmac, detail, hint, core: false }, keyring };
}

export function receiptKeyFindings(
  config: UhConfig,
  stateDir: string,
): { findings: DoctorFinding[]; keyring: Keyring | null } {
  let signing: DoctorFinding;
  try {
    signing = signingFinding(config, stateDir);
  } catch (error) {
    const hint = 'fix UH_RECEIPT_SIGNING_KEY(_FILE), or make a pair: uh receipt key --generate <dir>';
    signing = { what: SIGNING, ok: false, detail: errorMessage(error), hint, core: false };
  }
  const { finding, keyring } = keyringFinding(config);
  return { findings: [signing, finding], keyring };
}

/** Live workers should sign with one key, and this host should know it. */
export function fleetKeyFindings(workers: Heartbeat[], keyring: Keyring | null): DoctorFinding[] {
  const byKey = new Map<string, string[]>();
  for (const w of workers)
    if (w.receipt_key_id) byKey.set(w.receipt_key_id, [...(byKey.get(w.receipt_key_id) ?? []), w.id]);
  if (byKey.size === 0) return [];
  const list = [...byKey].map(([id, ws]) => `${id} (${ws.join(', ')})`).join('; ');
  const findings: DoctorFinding[] = [
    byKey.size === 1
      ? { what: 'fleet receipt key', ok: true, detail: `every live worker signs with ${list}`, core: false }
      : {
          what: 'fleet receipt key',
          ok: false,
          detail: `live workers sign with ${byKey.size} different keys: ${list}`,
          hint: 'give every worker the same UH_RECEIPT_SIGNING_KEY_FILE (docs/deploy.md "Receipt keys")',
          core: false,
        },
  ];
  const unknown = [...byKey.keys()].filter(
    (id) => keyring !== null && !keyring.publicKeys.has(id) && !keyring.secrets.has(id),
  );
  if (unknown.length > 0) {
    findings.push({
      what: 'fleet receipts here',
      ok: false,
      detail: `key(s) ${unknown.join(', ')} not in this host's keyring: their receipts are refused here (exit 6)`,
      hint: "add the fleet's public key to UH_RECEIPT_PUBLIC_KEYS (uh receipt key --public on a worker)",
      core: false,
    });
  }
  return findings;
}
