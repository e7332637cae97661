export * from './runtime-adapter-v1.js';
export * from './runtime-context.js';
export * from './runtime-event.js';
export * from './runtime-recovery.js';
