/**
 * `uh doctor`'s receipt-key findings: which key this host signs with, whether a sandbox could
 * read it, what this host verifies with, and (with a fleet) whether the live workers all sign
 * with one key this host knows. None is core: receipts never stop a run, they stop its belief.
 */
import { relative, isAbsolute } from 'node:path';
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

const inside = (path: string, dir: string) => {
  const rel = relative(dir, path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel);
};

function signingFinding(config: UhConfig, stateDir: string): DoctorFinding {
  const r = config.receipts;
  if (r.signer === 'hmac') {
    return { what: 'receipt signing key', ok: false, detail: 'HMAC (UH_RECEIPT_KEY / UH_RECEIPT_KEY_FILE): only a host holding the secret can verify, and it can sign too', hint: 'for a fleet: uh receipt key --generate <dir>, then UH_RECEIPT_SIGNING_KEY_FILE on the workers', core: false };
  }
  const key = loadReceiptKey(r, false);
  if (!key) return { what: 'receipt signing key', ok: true, detail: `none yet: ${r.signingKeyFile} is made on the first signed receipt`, core: false };
  const where = r.signingKey !== undefined ? 'UH_RECEIPT_SIGNING_KEY' : r.signingKeyFile;
  const masked = r.signingKey !== undefined || [config.core.cacheDir, stateDir].some((d) => inside(r.signingKeyFile, d));
  return masked
    ? { what: 'receipt signing key', ok: true, detail: `Ed25519 key ${key.id} (${where})`, core: false }
    : { what: 'receipt signing key', ok: false, detail: `Ed25519 key ${key.id} in ${where}, outside the state and cache dirs: a sandbox may read it`, hint: 'move it under UH_STATE_DIR or UH_CACHE_DIR (masked from every sandbox; docs/security.md)', core: false };
}

function keyringFinding(config: UhConfig): { finding: DoctorFinding; keyring: Keyring | null } {
  try {
    const keyring = loadKeyring(config.receipts);
    const ids = [...keyring.publicKeys.keys()];
    const detail = ids.length > 0 ? `public key(s) ${ids.join(', ')}${keyring.secrets.size > 0 ? ' + this host\'s HMAC key' : ''}` : keyring.secrets.size > 0 ? 'this host\'s HMAC key only' : 'no key: a signed receipt cannot be verified here';
    const ok = ids.length > 0 || keyring.secrets.size > 0;
    return { finding: { what: 'receipt verification', ok, detail, hint: "set UH_RECEIPT_PUBLIC_KEYS to the fleet's public key(s)", core: false }, keyring };
  } catch (error) {
    return { finding: { what: 'receipt verification', ok: false, detail: errorMessage(error), hint: 'fix UH_RECEIPT_PUBLIC_KEYS', core: false }, keyring: null };
  }
}

export function receiptKeyFindings(config: UhConfig, stateDir: string): { findings: DoctorFinding[]; keyring: Keyring | null } {
  let signing: DoctorFinding;
  try {
    signing = signingFinding(config, stateDir);
  } catch (error) {
    signing = { what: 'receipt signing key', ok: false, detail: errorMessage(error), hint: 'fix UH_RECEIPT_SIGNING_KEY(_FILE), or make a pair: uh receipt key --generate <dir>', core: false };
  }
  const { finding, keyring } = keyringFinding(config);
  return { findings: [signing, finding], keyring };
}

/** Live workers should sign with one key, and this host should know it. */
export function fleetKeyFindings(workers: Heartbeat[], keyring: Keyring | null): DoctorFinding[] {
  const byKey = new Map<string, string[]>();
  for (const w of workers) if (w.receipt_key_id) byKey.set(w.receipt_key_id, [...(byKey.get(w.receipt_key_id) ?? []), w.id]);
  if (byKey.size === 0) return [];
  const list = [...byKey].map(([id, ws]) => `${id} (${ws.join(', ')})`).join('; ');
  const unknown = [...byKey.keys()].filter((id) => keyring !== null && !keyring.publicKeys.has(id) && !keyring.secrets.has(id));
  const findings: DoctorFinding[] = [
    byKey.size === 1
      ? { what: 'fleet receipt key', ok: true, detail: `every live worker signs with ${list}`, core: false }
      : { what: 'fleet receipt key', ok: false, detail: `live workers sign with ${byKey.size} different keys: ${list}`, hint: 'give every worker the same UH_RECEIPT_SIGNING_KEY_FILE (docs/deploy.md "Receipt keys")', core: false },
  ];
  if (unknown.length > 0) {
    findings.push({ what: 'fleet receipts here', ok: false, detail: `key(s) ${unknown.join(', ')} not in this host's keyring: their receipts are refused here (exit 6)`, hint: "add the fleet's public key to UH_RECEIPT_PUBLIC_KEYS (uh receipt key --public on a worker)", core: false });
  }
  return findings;
}
