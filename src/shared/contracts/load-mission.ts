import { existsSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { invalidInput } from '../errors.js';
import { classifyRepositoryUrl, type UrlKind } from './git-inputs.js';
import { parseDocumentText, readDocument } from './load-file.js';
import { MissionSchema, type Mission } from './mission.js';
import { applyMissionOverrides, type MissionOverrides } from './mission-overrides.js';
import { parseOrThrow } from './zod-issues.js';

/** A git URL (scheme or scp-like `user@host:path`) rather than a local path. */
export function isRemoteUrl(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^[^/\s]+@[^/\s]+:/.test(url);
}

/** Which repository locations a producer accepts beyond https, ssh and scp-form. */
export interface RepositoryPolicy {
  /** Local paths and file:// URLs (the CLI allows them by default, the HTTP API does not). */
  allowLocal: boolean;
  /** Plain http:// (off by default). */
  allowHttp: boolean;
}

export const CLI_POLICY: RepositoryPolicy = { allowLocal: true, allowHttp: false };

/** The policy from configuration: local paths default to allowed on the CLI, refused over HTTP. */
export function repositoryPolicy(
  config: { allowLocalRepos: boolean | undefined; allowHttpRepos: boolean },
  producer: 'cli' | 'http',
): RepositoryPolicy {
  return { allowLocal: config.allowLocalRepos ?? producer === 'cli', allowHttp: config.allowHttpRepos };
}

/** The URL's kind once the schema accepted it; throws when the policy refuses that kind. */
function enforcePolicy(url: string, policy: RepositoryPolicy, source: string): UrlKind {
  const verdict = classifyRepositoryUrl(url);
  const kind = 'kind' in verdict ? verdict.kind : 'local';
  const refusal =
    (kind === 'local' || kind === 'file') && !policy.allowLocal
      ? 'local paths and file:// are not allowed here (set UH_ALLOW_LOCAL_REPOS=1 to allow them)'
      : kind === 'http' && !policy.allowHttp
        ? 'plain http:// is not allowed (use https://, or set UH_ALLOW_HTTP_REPOS=1)'
        : null;
  if (refusal) throw invalidInput(`invalid ${source}: 1 problem`, [`repository.url: ${refusal}`]);
  return kind;
}

/** Parse a mission; a relative local repository path resolves against `baseDir`. */
export function parseMission(
  value: unknown,
  baseDir: string,
  source = 'mission',
  policy: RepositoryPolicy = CLI_POLICY,
): Mission {
  const mission = parseOrThrow(MissionSchema, value, source);
  const url = mission.repository.url;
  const kind = enforcePolicy(url, policy, source);
  if (kind === 'local') mission.repository.url = isAbsolute(url) ? url : resolve(baseDir, url);
  // The hidden verifier is read on this (the producer's) host, relative to the mission file: a
  // producer that refuses local paths (the HTTP API by default) refuses it too.
  if (mission.verification_hidden && !policy.allowLocal)
    throw invalidInput(`invalid ${source}: 1 problem`, [
      'verification_hidden: names a directory on the producer host; local paths are not allowed here (submit with the CLI, or set UH_ALLOW_LOCAL_REPOS=1)',
    ]);
  if (mission.verification_hidden && !isAbsolute(mission.verification_hidden.path))
    mission.verification_hidden.path = resolve(baseDir, mission.verification_hidden.path);
  // A file:// URL stays a URL (cloned into a mirror like any remote), but it must name something.
  if (kind === 'file' && !existsSync(decodeURIComponent(url.slice('file://'.length)))) {
    throw invalidInput(
      `${source}: 1 problem`,
      [`repository.url: ${url} does not exist`],
      'give an existing repository path or URL',
    );
  }
  return mission;
}

/** A mission from an HTTP body: the same limits and checks as a file (JSON only). */
export function parseMissionBody(text: string, baseDir: string, policy: RepositoryPolicy): Mission {
  return parseMission(parseDocumentText(text, 'json', 'body'), baseDir, 'mission', policy);
}

/** A mission file; `overrides` (CLI flags, the CI run's template variables) apply before validation. */
export function loadMissionFile(
  path: string,
  policy: RepositoryPolicy = CLI_POLICY,
  overrides: MissionOverrides = {},
): Mission {
  return parseMission(applyMissionOverrides(readDocument(path), overrides, path), dirname(resolve(path)), path, policy);
}
