import { hostSettingsOf, type UhConfig } from '../../../shared/config.js';
import { repositoryPolicy } from '../../../shared/contracts/load-mission.js';
import { promotionIdentity } from '../../../promotion/promotion-identity.js';
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { invalidInput } from '../../../shared/errors.js';
import { createLogger } from '../../../shared/logger.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  type CommandSpec,
} from '../cli-kit.js';

const API_START: CommandSpec = {
  usage: 'uh api start [--port 8787] [--host 127.0.0.1] [--insecure-loopback] [--redis url] [--state-dir dir]',
  summary:
    'Serve queue mode over HTTP: POST /v1/missions, GET /v1/operations/:id (and /receipt, /diff, /final-message, /events as SSE), POST /v1/operations/:id/cancel. Prints "listening on <url>" when ready; SIGINT/SIGTERM stop it.',
  options: {
    ...COMMON_OPTIONS,
    port: { type: 'string', default: '8787' },
    host: { type: 'string', default: '127.0.0.1' },
    redis: { type: 'string' },
    'insecure-loopback': { type: 'boolean', default: false },
  },
  details: [
    'Every request needs "Authorization: Bearer <token>" (UH_API_TOKEN: at least 16 characters, 32 beyond loopback). Without UH_API_TOKEN the server refuses to start, unless --insecure-loopback on a loopback --host: then it writes a fresh token to <cache>/api-token (mode 0600; the cache dir is masked in every sandbox) and `uh mission submit --api http://127.0.0.1:…` reads it from there.',
    'UH_API_ALLOWED_HOSTS (Host names; default: loopback names on loopback), UH_API_ALLOWED_ORIGINS (browser origins, CORS; default: none), UH_API_SSE_MAX_CLIENTS (default 1000), UH_API_SSE_KEEPALIVE_MS (default 15000).',
    'Routes: docs/http-api.md, or GET /openapi.json; Prometheus metrics at GET /metrics.',
    'Workers (uh worker start) run the missions; this server only submits and reads. --port 0 picks a free port.',
  ],
  examples: [
    'uh api start --port 8787',
    'curl -X POST localhost:8787/v1/missions -H "content-type: application/json" --data @mission.json',
    'curl -N localhost:8787/v1/operations/hello-001/events',
  ],
};

export async function apiStart(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(API_START, argv);
  if (values.help) return (void process.stdout.write(`${helpText(API_START)}\n`), EXIT.ok);
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw invalidInput(`--port: "${values.port}" must be a port number (0 picks a free one)`);
  const host = values.host as string;
  const { apiSessionKey, readApiConfig, writeLoopbackToken } = await import('../../http/api-config.js');
  const mint = values['insecure-loopback'] === true ? () => writeLoopbackToken(config.core.cacheDir) : undefined;
  const apiConfig = readApiConfig(config.childEnv, host, mint, apiSessionKey(config.core.cacheDir));
  const { loadKeyring } = await import('../../../operation/receipt-keys.js');
  loadKeyring(config.receipts); // before Redis: a bad UH_RECEIPT_PUBLIC_KEYS is exit 2 (the server loads it again)
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  const { buildApiServer } = await import('../../http/api-server.js');
  const app = await buildApiServer({
    client,
    config: apiConfig,
    stateDir: resolveStateDir(values['state-dir'] as string | undefined, config),
    cacheDir: config.core.cacheDir,
    baseDir: process.cwd(),
    repositoryPolicy: repositoryPolicy(config.core, 'http'),
    prices: config.core.prices,
    hostSettings: hostSettingsOf(config),
    receiptKey: config.receipts,
    promotionIdentity: promotionIdentity({}, config.childEnv),
    // The access log is on whatever UH_LOG_LEVEL says, unless UH_API_ACCESS_LOG=0.
    ...(config.api.accessLog ? { accessLog: createLogger('info', { log: 'access' }) } : {}),
  });
  try {
    await app.listen({ port, host });
  } catch (error) {
    await client.close();
    throw error;
  }
  const address = app.server.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  process.stdout.write(`listening on http://${host.includes(':') ? `[${host}]` : host}:${actual}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      app.server.closeAllConnections();
      void app.close().then(() => resolve());
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await client.close();
  return EXIT.ok;
}
