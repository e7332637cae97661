/**
 * Start the scripted Anthropic Messages server (test/fixtures/model-server/anthropic-server.mjs)
 * as its own process on 127.0.0.1:0 and talk to its control API. See that file for the script
 * format. Used to point Claude Code (claude-code-acp, `ANTHROPIC_BASE_URL`) at a model we script.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../fixtures/model-server/anthropic-server.mjs', import.meta.url));

export type AnthropicStep =
  | { kind: 'text'; text: string }
  | { kind: 'tool_use'; calls: Array<{ id?: string; name: string; input: unknown }> }
  | { kind: 'error'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'hang' };

export interface AnthropicRequest {
  model: string;
  stream: boolean;
  tools: string[];
  tool_results: string[];
}

export interface AnthropicServer {
  /** The base URL for `ANTHROPIC_BASE_URL` (no `/v1`). */
  readonly url: string;
  /** Replace the script (and the accepted `x-api-key`); resets the recorded requests. */
  script(steps: AnthropicStep[], apiKey?: string): Promise<void>;
  /** Every agent turn (`/v1/messages` with tools) since the last `script()`, in order. */
  requests(): Promise<AnthropicRequest[]>;
  close(): Promise<void>;
}

export async function startAnthropicServer(): Promise<AnthropicServer> {
  const child: ChildProcess = spawn(process.execPath, [SERVER], { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => {
      rl.close();
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`anthropic server exited early (${code})`)));
    child.once('error', reject);
  });
  const { url } = JSON.parse(first) as { url: string };
  return {
    url,
    async script(steps, apiKey) {
      const res = await fetch(`${url}/__script`, {
        method: 'PUT',
        body: JSON.stringify({ steps, ...(apiKey ? { api_key: apiKey } : {}) }),
      });
      if (!res.ok) throw new Error(`script rejected: ${res.status}`);
    },
    async requests() {
      const res = await fetch(`${url}/__requests`);
      return ((await res.json()) as { requests: AnthropicRequest[] }).requests;
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
