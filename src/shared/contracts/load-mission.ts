import { dirname, isAbsolute, resolve } from 'node:path';
import { readDocument } from './load-file.js';
import { MissionSchema, type Mission } from './mission.js';
import { parseOrThrow } from './zod-issues.js';

/** A git URL (scheme or scp-like `user@host:path`) rather than a local path. */
export function isRemoteUrl(url: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url) || /^[^/\s]+@[^/\s]+:/.test(url);
}

/** Parse a mission; a relative local repository path resolves against `baseDir`. */
export function parseMission(value: unknown, baseDir: string, source = 'mission'): Mission {
  const mission = parseOrThrow(MissionSchema, value, source);
  const url = mission.repository.url;
  if (!isRemoteUrl(url)) {
    const local = url.startsWith('file://') ? url.slice('file://'.length) : url;
    mission.repository.url = isAbsolute(local) ? local : resolve(baseDir, local);
  }
  return mission;
}

export function loadMissionFile(path: string): Mission {
  return parseMission(readDocument(path), dirname(resolve(path)), path);
}
