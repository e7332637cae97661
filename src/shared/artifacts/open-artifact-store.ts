/** The artifact store a host's settings name (`UH_ARTIFACT_STORE`, parsed in src/shared/config.ts). */
import { ArtifactStore } from './artifact-store.js';
import { DirBlobStore } from './dir-blob-store.js';
import { S3BlobStore, type S3Location } from './s3-blob-store.js';

export type ArtifactStoreSetting = { kind: 'dir'; root: string } | ({ kind: 's3' } & S3Location);

export function openArtifactStore(setting: ArtifactStoreSetting): ArtifactStore {
  return new ArtifactStore(setting.kind === 'dir' ? new DirBlobStore(setting.root) : new S3BlobStore(setting));
}
