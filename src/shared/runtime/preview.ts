/**
 * Bounded previews of tool arguments and results for events: a file's full content must not be
 * copied into events.jsonl. Pure.
 */
/** Longest string kept whole in a preview. */
const PREVIEW = 2000;

/** A bounded, JSON-safe preview of any value (tool arguments, tool results). */
export function preview(value: unknown): unknown {
  if (typeof value === 'string')
    return value.length > PREVIEW ? `${value.slice(0, PREVIEW)}… [${value.length} chars]` : value;
  if (value === null || typeof value !== 'object') return value;
  const text = JSON.stringify(value) ?? '';
  if (text.length <= PREVIEW) return value;
  if (Array.isArray(value)) return `[${value.length} items, ${text.length} chars]`;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = typeof v === 'string' || typeof v === 'object' ? previewShallow(v) : v;
  return out;
}

function previewShallow(v: unknown): unknown {
  if (typeof v === 'string') return v.length > 200 ? `${v.slice(0, 200)}… [${v.length} chars]` : v;
  const text = JSON.stringify(v) ?? '';
  return text.length > 200 ? `[${text.length} chars]` : v;
}
