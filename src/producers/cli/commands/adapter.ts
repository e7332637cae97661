import type { UhConfig } from '../../../shared/config.js';
import { runtimeFetch } from '../../../shared/transport/http-fetch.js';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify as toYaml } from 'yaml';
import { ID_PATTERN } from '../../../shared/contracts/ids.js';
import { EXIT } from '../../../shared/contracts/status.js';
import { errorMessage, invalidInput, UhError } from '../../../shared/errors.js';
import { spawnGroup } from '../../../shared/process/spawn-group.js';
import { loadAllRuntimeAdapters } from '../../../workers/runtimes/registry.js';
import { RUNTIME_CATALOG, runtimeCatalog } from '../../../workers/operation-ports.js';
import type { ManifestSource } from '../../../shared/contracts/adapter-manifest.js';
import { defaultManifest, loadManifest, manifestPath, mergeConfig } from '../../../operation/resolve-runtime.js';
import { parseOrThrow } from '../../../shared/contracts/zod-issues.js';
import {
  COMMON_OPTIONS,
  helpText,
  parseCommand,
  queueRedisUrl,
  resolveStateDir,
  writeJson,
  type CommandSpec,
} from '../cli-kit.js';
import { makeDir } from '../../../shared/fs/make-dir.js';

const LIST: CommandSpec = {
  usage: 'uh adapter list [--json] [--state-dir dir]',
  summary: 'List the registered runtimes, their capabilities, and any manifest in <state>/adapters/.',
  options: { ...COMMON_OPTIONS },
  examples: ['uh adapter list', 'uh adapter list --json'],
};
const ADD: CommandSpec = {
  usage: 'uh adapter add <id> [--kind runtime] [--force] [--state-dir dir]',
  summary:
    "Write <state>/adapters/<id>.yaml (uh.adapter.v0) from the runtime's template, to edit. --kind picks the runtime when the id is your own name.",
  options: { ...COMMON_OPTIONS, kind: { type: 'string' }, force: { type: 'boolean', default: false } },
  examples: ['uh adapter add command', 'uh adapter add my-codex --kind codex'],
};
const PUBLISH: CommandSpec = {
  usage: 'uh adapter publish <manifest.yaml> [--redis url] [--json]',
  summary:
    "Store a manifest (uh.adapter.v0) in the fleet's Redis, versioned by digest, with who published it and when: every worker and producer without a local copy of <id>.yaml then serves it (read at each job; a changed one applies to missions submitted after it).",
  options: { ...COMMON_OPTIONS, redis: { type: 'string' } },
  details: [
    "The file is checked first as a local manifest is (strict; runtime_config by the runtime's schema) and refused",
    'when runtime_config holds a secret in clear. A host with its own <state>/adapters/<id>.yaml keeps using it: when',
    'its digest differs, uh doctor --redis reports the drift and a worker refuses jobs validated against the other one.',
    'Needs the producer or api Redis role (docs/deploy.md#redis-acl-users); workers only read.',
  ],
  examples: ['uh adapter publish .harness/adapters/my-codex.yaml', 'uh adapter publish my-cmd.yaml --json'],
};
const CHECK: CommandSpec = {
  usage: 'uh adapter check <id> [--json] [--state-dir dir]',
  summary:
    'Is the runtime usable on this machine (binary found, version, endpoint reachable)? Exit 0 when usable, 3 when not.',
  options: { ...COMMON_OPTIONS },
  examples: ['uh adapter check command', 'uh adapter check hermes-proxy --json'],
};

/** Manifests under <state>/adapters/ named by their own id (`my-codex` of kind `codex`), not a registered runtime's. */
async function ownManifests(
  stateDir: string,
): Promise<Array<{ id: string; name: string; capabilities: string[]; manifest: string; runtime_kind: string | null }>> {
  const dir = join(stateDir, 'adapters');
  if (!existsSync(dir)) return [];
  const registered = new Set(RUNTIME_CATALOG.ids);
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.yaml') && !registered.has(f.slice(0, -5)))
    .sort();
  return Promise.all(
    files.map(async (f) => {
      const id = f.slice(0, -5);
      try {
        const { manifest, source } = await loadManifest(stateDir, id, RUNTIME_CATALOG);
        return {
          id,
          name: manifest.name,
          capabilities: Object.entries(manifest.capabilities)
            .filter(([, on]) => on)
            .map(([c]) => c),
          manifest: source,
          runtime_kind: manifest.runtime_kind,
        };
      } catch (error) {
        return {
          id,
          name: `invalid manifest: ${errorMessage(error).split('\n')[0]}`,
          capabilities: [],
          manifest: join(dir, f),
          runtime_kind: null,
        };
      }
    }),
  );
}

export async function adapterList(argv: string[], config: UhConfig): Promise<number> {
  const { values } = parseCommand(LIST, argv);
  if (values.help) return (void process.stdout.write(`${helpText(LIST)}\n`), EXIT.ok);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const rows = [
    ...(await loadAllRuntimeAdapters()).map((a) => ({
      id: a.id,
      name: a.displayName,
      capabilities: [...a.capabilities] as string[],
      manifest: existsSync(manifestPath(stateDir, a.id)) ? manifestPath(stateDir, a.id) : null,
      runtime_kind: a.id as string | null,
    })),
    ...(await ownManifests(stateDir)),
  ];
  if (values.json) writeJson(rows);
  else {
    for (const r of rows) {
      const kind = r.runtime_kind && r.runtime_kind !== r.id ? ` (kind ${r.runtime_kind})` : '';
      process.stdout.write(
        `${r.id.padEnd(18)} ${r.name}${kind}${r.manifest ? `  [${r.manifest}]` : ''}\n  capabilities: ${r.capabilities.join(', ') || '-'}\n`,
      );
    }
  }
  return EXIT.ok;
}

export async function adapterAdd(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(ADD, argv);
  if (values.help) return (void process.stdout.write(`${helpText(ADD)}\n`), EXIT.ok);
  const id = positionals[0];
  if (!id || positionals.length !== 1) throw invalidInput('uh adapter add needs one id', [], ADD.usage);
  if (!ID_PATTERN.test(id)) throw invalidInput(`id "${id}" must match ${ID_PATTERN}`);
  const kind = (values.kind as string | undefined) ?? id;
  const adapter = await RUNTIME_CATALOG.load(kind);
  if (!adapter) throw invalidInput(`--kind: unknown runtime "${kind}"`, [], `known: ${RUNTIME_CATALOG.ids.join(', ')}`);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const path = manifestPath(stateDir, id);
  if (existsSync(path) && !values.force)
    throw new UhError('conflict', `${path} exists`, { hint: 'edit it, or pass --force to overwrite' });
  const manifest = {
    ...defaultManifest(adapter),
    id,
    runtime_config: mergeConfig(adapter.defaultConfig, adapter.exampleConfig ?? {}),
  };
  // The template must parse strictly, or the user starts from something broken.
  parseOrThrow(adapter.configSchema, manifest.runtime_config, `${kind} template`);
  makeDir(dirname(path));
  writeFileSync(path, `# uh adapter manifest (uh.adapter.v0). Docs: docs/runtimes/${kind}.md\n${toYaml(manifest)}`);
  if (values.json) writeJson({ path, manifest });
  else process.stdout.write(`wrote ${path}\nnext: edit runtime_config, then: uh adapter check ${id}\n`);
  return EXIT.ok;
}

export async function adapterPublish(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(PUBLISH, argv);
  if (values.help) return (void process.stdout.write(`${helpText(PUBLISH)}\n`), EXIT.ok);
  const path = positionals[0];
  if (!path || positionals.length !== 1)
    throw invalidInput('uh adapter publish needs one manifest file', [], PUBLISH.usage);
  const { QueueClient } = await import('../../queue/queue-client.js');
  const { publishAdapter } = await import('../../publish-adapter.js');
  const client = await QueueClient.open(config.queue, queueRedisUrl(config, values.redis));
  try {
    const { record, previous } = await publishAdapter(client, path);
    const { manifest: _manifest, ...summary } = record;
    if (values.json) writeJson({ ...summary, previous });
    else
      process.stdout.write(
        `published ${record.id} ${record.digest} by ${record.published_by} at ${record.published_at}` +
          (previous === null
            ? ' (first version)\n'
            : previous === record.digest
              ? ' (unchanged)\n'
              : ` (was ${previous})\n`),
      );
  } finally {
    await client.close();
  }
  return EXIT.ok;
}

export async function adapterCheck(argv: string[], config: UhConfig): Promise<number> {
  const { values, positionals } = parseCommand(CHECK, argv);
  if (values.help) return (void process.stdout.write(`${helpText(CHECK)}\n`), EXIT.ok);
  const id = positionals[0];
  if (!id || positionals.length !== 1) throw invalidInput('uh adapter check needs one id', [], CHECK.usage);
  const stateDir = resolveStateDir(values['state-dir'] as string | undefined, config);
  const { adapter, source, result } = await checkRuntime(id, stateDir, config);
  if (values.json) writeJson({ id, runtime_kind: adapter.id, manifest: source, ...result });
  else {
    process.stdout.write(`${result.ok ? '✔' : '✖'} ${id}: ${result.summary}\n`);
    for (const e of result.errors) process.stdout.write(`  ${e}\n`);
    if (result.hint) process.stdout.write(`hint: ${result.hint}\n`);
  }
  return result.ok ? EXIT.ok : EXIT.blocked;
}

/** The runtime's `check()` with its manifest (or defaults): `uh adapter check` and `uh worker start` use it. */
export async function checkRuntime(id: string, stateDir: string, config: UhConfig, manifests?: ManifestSource) {
  const { manifest, source, digest } = await loadManifest(stateDir, id, runtimeCatalog(manifests));
  const adapter = await RUNTIME_CATALOG.load(manifest.runtime_kind);
  if (!adapter) throw invalidInput(`${source}: unknown runtime_kind ${manifest.runtime_kind}`);
  const merged = mergeConfig(adapter.defaultConfig, manifest.runtime_config);
  const parsed = adapter.configSchema.safeParse(merged);
  const result = parsed.success
    ? await adapter.check(parsed.data, {
        spawn: spawnGroup,
        fetch: runtimeFetch,
        now: () => Date.now(),
        env: config.childEnv,
      })
    : {
        ok: false,
        summary: `runtime_config in ${source} is incomplete or invalid`,
        errors: parsed.error.issues.map((i) => `runtime_config.${i.path.join('.')}: ${i.message}`),
        hint: `run: uh adapter add ${id}${id === adapter.id ? '' : ` --kind ${adapter.id}`}, then edit it`,
      };
  /** False when the manifest's runtime_config is incomplete (missions may supply the rest, e.g. command's argv). */
  return { adapter, source, digest, result, checked: parsed.success };
}
