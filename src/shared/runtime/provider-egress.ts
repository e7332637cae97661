/**
 * What runtime adapters declare for egress mode (`RuntimeAdapterV1.egress`, docs/security.md
 * "Network"): the model endpoints their config names, as `host:port` allowlist entries. Helpers
 * read the usual places (an environment's `*_BASE_URL`, a JSON `baseUrl`, a TOML `base_url`) and
 * never throw: an unreadable or malformed file declares nothing.
 */
import { readFileSync } from 'node:fs';
import { egressEntryOfUrl } from '../contracts/egress.js';

/** The public endpoints of well-known providers (a runtime's built-in provider names them). */
export const PROVIDER_HOSTS: Readonly<Record<string, readonly string[]>> = {
  openai: ['api.openai.com:443'],
  anthropic: ['api.anthropic.com:443'],
  google: ['generativelanguage.googleapis.com:443'],
  gemini: ['generativelanguage.googleapis.com:443'],
  openrouter: ['openrouter.ai:443'],
  groq: ['api.groq.com:443'],
  xai: ['api.x.ai:443'],
  mistral: ['api.mistral.ai:443'],
  deepseek: ['api.deepseek.com:443'],
};

/** Entries of the URLs among `values` (non-URLs skipped). */
export function urlEntries(values: readonly (string | undefined)[]): string[] {
  return values.map((v) => (v ? egressEntryOfUrl(v.trim()) : null)).filter((e): e is string => e !== null);
}

/** `OPENAI_BASE_URL`, `ANTHROPIC_BASE_URL`, `*_API_BASE`, `*_ENDPOINT`: the endpoints an environment names. */
export function envEndpointEntries(env: Readonly<Record<string, string | undefined>>): string[] {
  return urlEntries(
    Object.entries(env)
      .filter(([name]) => /(_BASE_URL|_API_BASE|_ENDPOINT|_BASEURL)$/.test(name))
      .map(([, value]) => value),
  );
}

function readText(file: string): string | null {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return null;
  }
}

/** Every `baseUrl` / `baseURL` / `base_url` string in a JSON file (pi's models.json, opencode's config). */
export function jsonBaseUrlEntries(file: string): string[] {
  const text = readText(file);
  return text === null ? [] : jsonTextBaseUrlEntries(text);
}

/** The same of JSON text (an env value such as `OPENCODE_CONFIG_CONTENT`); not JSON: nothing. */
export function jsonTextBaseUrlEntries(text: string): string[] {
  const found: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value && typeof value === 'object')
      for (const [key, v] of Object.entries(value)) {
        if (/^base_?url$/i.test(key) && typeof v === 'string') found.push(v);
        else walk(v);
      }
  };
  try {
    walk(JSON.parse(text));
  } catch {
    return [];
  }
  return urlEntries(found);
}

/** Every `base_url = "…"` (and `openai_base_url`, `chatgpt_base_url`) in a TOML file (codex's config.toml). */
export function tomlBaseUrlEntries(file: string): string[] {
  const text = readText(file);
  if (text === null) return [];
  const urls = [...text.matchAll(/^\s*(?:[a-z_]*base_url)\s*=\s*["']([^"'\n]+)["']/gm)].map((m) => m[1]);
  return urlEntries(urls);
}
