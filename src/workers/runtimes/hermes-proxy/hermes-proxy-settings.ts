import { z } from 'zod';

/** Where `hermes proxy start` listens out of the box. */
export const HERMES_PROXY_DEFAULT_ENDPOINT = 'http://127.0.0.1:8645/v1';

/**
 * The bearer sent when none is configured. The proxy requires the header but ignores its value
 * and attaches the credentials of the local `hermes auth` store, so any non-empty value works.
 */
export const HERMES_PROXY_PLACEHOLDER_TOKEN = 'hermes-proxy-placeholder';

/** Headers the adapter owns; `extra_headers` may not set them. */
const RESERVED_HEADERS = new Set([
  'authorization',
  'content-type',
  'content-length',
  'host',
  'accept',
  'connection',
  'transfer-encoding',
]);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * `runtime_config` of the `hermes-proxy` runtime (strict: `endpoiint` or `modle` is an error at
 * manifest load and again after mission overrides are merged).
 */
export const HermesProxySettingsSchema = z.strictObject({
  /** Proxy base URL including `/v1`; requests go to `<endpoint>/chat/completions`. */
  endpoint: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL such as http://127.0.0.1:8645/v1' })
    .default(HERMES_PROXY_DEFAULT_ENDPOINT)
    .transform((url) => url.replace(/\/+$/, '')),
  /** Model id passed verbatim (whatever the upstream exposes; `uh adapter check` lists them). */
  model: z.string().trim().min(1, 'is required: the model id the proxy should route to'),
  /**
   * Bearer value. The proxy itself drops it and attaches its own upstream bearer (hermes-agent
   * hermes_cli/proxy/server.py); it is sent for whatever may sit in front of it. A secret.
   */
  auth_token: z
    .string()
    .refine((t) => t.trim() !== '' && !/[\r\n]/.test(t), 'must be a non-empty single-line string')
    .default(HERMES_PROXY_PLACEHOLDER_TOKEN),
  /** The upstream `hermes proxy start --provider` was given; names the re-auth command in hints. */
  provider: z.enum(['nous', 'claude', 'chatgpt', 'supergrok']).optional(),
  /** Sent as a `system` message before the mission prompt. */
  system_prompt: z.string().min(1).optional(),
  temperature: z.number().min(0).max(2).default(0),
  max_tokens: z.number().int().positive().optional(),
  /** Budget for the whole exchange (headers and body); past it the run fails as timed out. */
  request_timeout_ms: z
    .number()
    .int()
    .positive()
    .max(24 * 3_600_000)
    .default(300_000),
  /** Ask for SSE. The reply is sniffed either way: a failing streamed request answers with JSON. */
  stream: z.boolean().default(true),
  /** Extra request headers; their values are treated as secrets. Cannot override the adapter's own. */
  extra_headers: z
    .record(z.string(), z.string())
    .superRefine((headers, ctx) => {
      for (const [name, value] of Object.entries(headers)) {
        const problem = !HEADER_NAME.test(name)
          ? 'must be an HTTP header name'
          : RESERVED_HEADERS.has(name.toLowerCase())
            ? 'is set by the adapter (use auth_token for the bearer)'
            : /[\r\n]/.test(value)
              ? 'must be a single line'
              : null;
        if (problem) ctx.addIssue({ code: 'custom', path: [name], message: problem });
      }
    })
    .default({}),
});

export type HermesProxySettings = z.infer<typeof HermesProxySettingsSchema>;
