/**
 * Start the scripted Responses API server (test/fixtures/model-server/responses-server.mjs) as
 * its own process on 127.0.0.1:0 and talk to its control API. See that file for the script
 * format. Reusable by any test that points a real agent (codex exec, codex app-server) at it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const SERVER = fileURLToPath(new URL('../fixtures/model-server/responses-server.mjs', import.meta.url));

export type ResponsesStep =
  | { kind: 'function_call'; name?: string; arguments: unknown; call_id?: string; usage?: StepUsage }
  | { kind: 'custom_tool_call'; name?: string; input: string; call_id?: string; usage?: StepUsage }
  | { kind: 'message'; text: string; usage?: StepUsage }
  | { kind: 'failed'; code?: string; message?: string }
  | { kind: 'http'; status: number; body?: unknown; headers?: Record<string, string> }
  | { kind: 'sse'; events: Array<{ type: string; [k: string]: unknown }> }
  | { kind: 'hang' };

export interface StepUsage {
  input_tokens?: number;
  output_tokens?: number;
  cached_tokens?: number;
  reasoning_tokens?: number;
}

export interface RecordedRequest {
  path: string;
  headers: Record<string, string>;
  body: { model?: string; input?: Array<Record<string, unknown>>; tools?: unknown[]; [k: string]: unknown };
}

export interface ResponsesServer {
  /** Base URL including `/v1`, for a provider's `base_url`. */
  readonly url: string;
  readonly port: number;
  /** Replace the script; resets the cursor and the recorded requests. */
  script(steps: ResponsesStep[]): Promise<void>;
  /** Every `/v1/responses` request since the last `script()`. */
  requests(): Promise<RecordedRequest[]>;
  close(): Promise<void>;
}

export async function startResponsesServer(options: { apiKey?: string } = {}): Promise<ResponsesServer> {
  const args = [SERVER, '--port', '0', ...(options.apiKey ? ['--api-key', options.apiKey] : [])];
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const first = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: child.stdout! });
    rl.once('line', (line) => {
      rl.close();
      resolve(line);
    });
    child.once('exit', (code) => reject(new Error(`responses server exited early (${code})`)));
    child.once('error', reject);
  });
  const { url, port } = JSON.parse(first) as { url: string; port: number };
  const control = `http://127.0.0.1:${port}/__control`;
  return {
    url,
    port,
    async script(steps) {
      const res = await fetch(`${control}/script`, { method: 'POST', body: JSON.stringify(steps) });
      if (!res.ok) throw new Error(`script rejected: ${res.status}`);
    },
    async requests() {
      const res = await fetch(`${control}/requests`);
      return ((await res.json()) as { requests: RecordedRequest[] }).requests;
    },
    async close() {
      if (child.exitCode !== null) return;
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGTERM');
      await exited;
    },
  };
}
