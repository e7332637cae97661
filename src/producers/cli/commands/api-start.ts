import type { UhConfig } from '../../../shared/config.js';
import { EXIT } from '../../../shared/contracts/exit-codes.js';
import { invalidInput } from '../../../shared/errors.js';
import { COMMON_OPTIONS, helpText, parseCommand, queueRedisUrl, resolveStateDir, type CommandSpec } from '../cli-kit.js';

const API_START: CommandSpec = {
  usage: 'uh api start [--port 8787] [--host 127.0.0.1] [--redis url] [--state-dir dir]',
  summary:
    'Serve queue mode over HTTP: POST /v1/missions, GET /v1/operations/:id (and /receipt, /diff, /final-message, /events as SSE), POST /v1/operations/:id/cancel. Prints "listening on <url>" when ready; SIGINT/SIGTERM stop it.',
  options: { ...COMMON_OPTIONS, port: { type: 'string', default: '8787' }, host: { type: 'string', default: '127.0.0.1' }, redis: { type: 'string' } },
  details: [
    'Set UH_API_TOKEN to require "Authorization: Bearer <token>" (required to listen beyond loopback).',
    'Workers (uh worker start) run the missions; this server only submits and reads. --port 0 picks a free port.',
  ],
  examples: [
    'uh api start --port 8787',
    'curl -X POST localhost:8787/v1/missions -H "content-type: application/json" --data @mission.json',
    'curl -N localhost:8787/v1/operations/hello-001/events',
  ],
};

const LOOPBACK = new Set(['127.0.0.1', '::1', 'localhost']);

export async function apiStart(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(API_START, argv);
  if (values.help) return void process.stdout.write(`${helpText(API_START)}\n`), EXIT.ok;
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw invalidInput(`--port: "${values.port}" must be a port number (0 picks a free one)`);
  const host = values.host as string;
  const token = config.api.token;
  if (!LOOPBACK.has(host) && token === undefined) {
    throw invalidInput(`--host ${host}: refusing to serve beyond loopback without a token`, [], 'set UH_API_TOKEN (clients send Authorization: Bearer <token>)');
  }
  const { QueueClient } = await import('../../queue/queue-client.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  const { createApiServer } = await import('../../http/api-server.js');
  const server = createApiServer({ client, stateDir: resolveStateDir(values['state-dir'] as string | undefined, config), cacheDir: config.core.cacheDir, token, baseDir: process.cwd() });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const actual = typeof address === 'object' && address ? address.port : port;
  process.stdout.write(`listening on http://${host.includes(':') ? `[${host}]` : host}:${actual}\n`);
  await new Promise<void>((resolve) => {
    const stop = () => {
      server.close(() => resolve());
      server.closeAllConnections();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  await client.close();
  return EXIT.ok;
}
