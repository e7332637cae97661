/**
 * `uh worker start --metrics-port [host:]port`: the same Prometheus metrics as the API's
 * /metrics (metrics.ts) on a worker-only host, on a plain node:http server with one route.
 * Binds 127.0.0.1 unless a host is given; no token (put it behind the network's own guard).
 */
import { createServer, type Server } from 'node:http';
import { invalidInput } from '../../shared/errors.js';
import type { QueueConfig } from '../../shared/config.js';
import { QueueClient } from '../queue/queue-client.js';
import { ApiMetrics } from './metrics.js';

export interface MetricsServer {
  url: string;
  close(): Promise<void>;
}

/** `9464` or `0.0.0.0:9464`; exit 2 naming the flag otherwise. */
export function parseListen(value: string): { host: string; port: number } {
  const m = /^(?:(.+):)?(\d{1,5})$/.exec(value.trim());
  const port = Number(m?.[2]);
  if (!m || port > 65535) throw invalidInput(`--metrics-port: "${value}" is not a port or host:port`);
  return { host: m[1] ?? '127.0.0.1', port };
}

export async function startMetricsServer(
  config: QueueConfig,
  redisUrl: string,
  listen: string,
): Promise<MetricsServer> {
  const { host, port } = parseListen(listen);
  const client = await QueueClient.open(config, redisUrl);
  const metrics = new ApiMetrics(client);
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics')
      return void res.writeHead(404).end('not found\n');
    metrics
      .render()
      .then((text) => res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(text))
      .catch((error: Error) => res.writeHead(500, { 'content-type': 'text/plain' }).end(`${error.message}\n`));
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, host, () => resolve()));
  const address = server.address();
  const bound = typeof address === 'object' && address ? address.port : port;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${bound}/metrics`,
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await client.close();
    },
  };
}
