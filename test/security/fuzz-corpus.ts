/**
 * A deterministic corpus of bad missions: mutations of one valid mission (each rendered as YAML,
 * JSON and an HTTP body) plus hand-written hostile documents. Every case names the field (or the
 * document) the refusal must name.
 */
import { stringify as toYaml } from 'yaml';

export type Format = 'yaml' | 'json' | 'http';

export interface BadMission {
  name: string;
  format: Format;
  text: string;
  /** What the one-line refusal must contain: a field path, or "(document)" for the file/body itself. */
  field: string;
}

export const DOCUMENT = '(document)';

export function validMission(): Record<string, any> {
  return {
    schema_version: 'uh.mission.v0',
    mission_id: 'fuzz',
    operation_id: 'fuzz-op',
    title: 'Fuzz',
    objective: 'Refuse bad input',
    repository: { url: 'https://example.invalid/r.git', ref: 'main' },
    runtime: 'command',
    runtime_config_overrides: { command: { argv: ['true'] } },
    scope: { allowed_change_globs: ['src/**'], forbidden_globs: [] },
    verification: [{ name: 'test', argv: ['true'], timeout_seconds: 60 }],
  };
}

type Mutation = [string, string, (m: Record<string, any>) => void];

const many = <T>(n: number, f: (i: number) => T): T[] => Array.from({ length: n }, (_, i) => f(i));
const set = (path: string, value: unknown) => (m: Record<string, any>) => {
  const parts = path.split('.');
  let at = m;
  for (const p of parts.slice(0, -1)) at = at[p] ??= {};
  at[parts[parts.length - 1] as string] = value;
};

const BAD_REFS = [
  'a\u0000b',
  '-x',
  '--upload-pack=touch /tmp/p',
  'a..b',
  'a b',
  'a~1',
  'a^',
  'a:b',
  'a?',
  'a*',
  'a[b',
  'a\\b',
  '/a',
  'a/',
  'a//b',
  'a.',
  '.a',
  'a.lock',
  'a/.b/c',
  '@',
  'a@{1}',
  'x'.repeat(300),
  '',
  '\u001b[31mred',
  'a\nb',
  'a\u007f',
];
const BAD_URLS = [
  '-uupload-pack=touch /tmp/p',
  '--upload-pack=touch /tmp/p',
  'ext::sh -c touch% /tmp/pwned',
  'fd::17',
  'EXT::x',
  'git://host/r.git',
  'ftp://host/r.git',
  'https://-oProxyCommand=x/r',
  'ssh://-oProxyCommand=x/r',
  'user@-oProxyCommand=x:r',
  'https://h/\u0000x',
  'https://h/\u001b[2Jx',
  `https://h/${'x'.repeat(3000)}`,
  '',
  'javascript://x',
  'https://',
  'http://example.invalid/r.git',
];
const BAD_IDS = ['', 'a b', 'x'.repeat(200), '../x', 'a\u0000', '-x', 'a:b', 'a/b', '\u001b[31m'];

function mutations(): Mutation[] {
  const list: Mutation[] = [
    ['schema_version missing', 'schema_version', (m) => delete m.schema_version],
    ['schema_version wrong', 'schema_version', set('schema_version', 'uh.mission.v9')],
    ['unknown top key', 'objectve', set('objectve', 'typo')],
    ['unknown nested key', 'repository.branch', set('repository.branch', 'main')],
    ...BAD_IDS.map((v, i): Mutation => [`mission_id ${i}`, 'mission_id', set('mission_id', v)]),
    ...BAD_IDS.map((v, i): Mutation => [`operation_id ${i}`, 'operation_id', set('operation_id', v)]),
    ['title empty', 'title', set('title', '')],
    ['title long', 'title', set('title', 'x'.repeat(201))],
    ['title number', 'title', set('title', 5)],
    ['title null', 'title', set('title', null)],
    ['objective empty', 'objective', set('objective', '')],
    ['objective 70k', 'objective', set('objective', 'x'.repeat(70_000))],
    ['objective list', 'objective', set('objective', ['a'])],
    ['notes 70k', 'context.notes', set('context', { notes: 'x'.repeat(70_000) })],
    ['context unknown', 'context.extra', set('context', { extra: 1 })],
    ['context file absolute', 'context.files[0]', set('context', { files: ['/etc/passwd'] })],
    ['context file dotdot', 'context.files[0]', set('context', { files: ['a/../../b'] })],
    ['context file 100k chars', 'context.files[0]', set('context', { files: ['x'.repeat(100_000)] })],
    ['context files 1001', 'context.files', set('context', { files: many(1001, (i) => `f${i}`) })],
    ...BAD_URLS.map((v, i): Mutation => [`repository.url ${i}`, 'repository.url', set('repository.url', v)]),
    ['repository.url number', 'repository.url', set('repository.url', 42)],
    ['repository missing', 'repository', (m) => delete m.repository],
    ...BAD_REFS.map((v, i): Mutation => [`repository.ref ${i}`, 'repository.ref', set('repository.ref', v)]),
    ['repository.ref number', 'repository.ref', set('repository.ref', 5)],
    ...(
      [
        ['empty', ''],
        ['space', 'a b'],
        ['empty list', []],
        ['33', many(33, (i) => `r${i}`)],
        ['number', 5],
        ['option', '-x'],
      ] as const
    ).map(([what, value]): Mutation => [
      `runtime ${what}`,
      'runtime',
      (m) => {
        m.runtime = value;
        delete m.runtime_config_overrides;
      },
    ]),
    [
      'overrides other runtime',
      'runtime_config_overrides.other',
      set('runtime_config_overrides', { command: {}, other: {} }),
    ],
    ['requires unknown', 'requires[0]', set('requires', ['flying'])],
    ['sandbox backend', 'sandbox.backend', set('sandbox', { backend: 'docker' })],
    ['sandbox env bad name', 'sandbox.env', set('sandbox', { env: { '1BAD': 'x' } })],
    ['sandbox env long name', 'sandbox.env', set('sandbox', { env: { ['A'.repeat(200)]: 'x' } })],
    ['sandbox env big value', 'sandbox.env.A', set('sandbox', { env: { A: 'x'.repeat(9000) } })],
    ['sandbox env 101', 'sandbox.env', set('sandbox', { env: Object.fromEntries(many(101, (i) => [`V${i}`, 'x'])) })],
    ['sandbox env number', 'sandbox.env.A', set('sandbox', { env: { A: 5 } })],
    ['port range low', 'sandbox.port_range[0]', set('sandbox', { port_range: [80, 2000] })],
    ['port range reversed', 'sandbox.port_range', set('sandbox', { port_range: [3000, 2000] })],
    ['promotion', 'promotion', set('promotion', 'merge')],
    ['timeout 0', 'timeout_seconds', set('timeout_seconds', 0)],
    ['timeout negative', 'timeout_seconds', set('timeout_seconds', -1)],
    ['timeout fraction', 'timeout_seconds', set('timeout_seconds', 1.5)],
    ['timeout string', 'timeout_seconds', set('timeout_seconds', '60')],
    ['timeout huge', 'timeout_seconds', set('timeout_seconds', 1e12)],
    ['labels number', 'labels.k', set('labels', { k: 5 })],
    ['labels long key', 'labels', set('labels', { ['k'.repeat(200)]: 'v' })],
    ['labels long value', 'labels.k', set('labels', { k: 'x'.repeat(2000) })],
    ['labels 65', 'labels', set('labels', Object.fromEntries(many(65, (i) => [`k${i}`, 'v'])))],
  ];
  for (const key of ['allowed_change_globs', 'forbidden_globs']) {
    const field = `scope.${key}`;
    list.push(
      [`${key} absolute`, `${field}[0]`, set(field, ['/etc/**'])],
      [`${key} windows`, `${field}[0]`, set(field, ['C:\\x'])],
      [`${key} dotdot`, `${field}[0]`, set(field, ['..'])],
      [`${key} empty`, `${field}[0]`, set(field, [''])],
      [`${key} 100k chars`, `${field}[0]`, set(field, ['*'.repeat(100_000)])],
      [
        `${key} 1001`,
        field,
        set(
          field,
          many(1001, (i) => `g${i}/**`),
        ),
      ],
      [`${key} number`, `${field}[0]`, set(field, [5])],
      [`${key} string`, field, set(field, 'src/**')],
    );
  }
  const check = (c: Record<string, unknown>) => set('verification', [{ name: 'test', argv: ['true'], ...c }]);
  list.push(
    ['check argv empty', 'verification[0].argv', check({ argv: [] })],
    ['check shell string', 'verification[0].argv', check({ argv: ['npm test'] })],
    ['check argv empty element', 'verification[0].argv[0]', check({ argv: [''] })],
    ['check argv 5000 chars', 'verification[0].argv[1]', check({ argv: ['echo', 'x'.repeat(5000)] })],
    ['check argv 257', 'verification[0].argv', check({ argv: many(257, () => 'x') })],
    ['check name space', 'verification[0].name', check({ name: 'a b' })],
    ['check name escape', 'verification[0].name', check({ name: '\u001b]0;pwned\u0007' })],
    ['check timeout 0', 'verification[0].timeout_seconds', check({ timeout_seconds: 0 })],
    ['check timeout huge', 'verification[0].timeout_seconds', check({ timeout_seconds: 1e9 })],
    ['check unknown key', 'verification[0].argvv', check({ argvv: ['x'] })],
    [
      'checks 101',
      'verification',
      set(
        'verification',
        many(101, (i) => ({ name: `c${i}`, argv: ['true'] })),
      ),
    ],
    [
      'check duplicate names',
      'verification[1].name',
      set('verification', [
        { name: 'a', argv: ['true'] },
        { name: 'a', argv: ['true'] },
      ]),
    ],
  );
  return list;
}

/** Documents no serializer would write: duplicate and prototype keys, bombs, depth, size, syntax. */
function handWritten(format: 'yaml' | 'json'): Array<{ name: string; text: string; field: string }> {
  const base = validMission();
  const json = (v: unknown) => JSON.stringify(v);
  if (format === 'json') {
    const body = json(base).slice(1, -1);
    return [
      { name: 'duplicate top key', text: `{${body},"title":"again"}`, field: 'title' },
      {
        name: 'duplicate nested key',
        text: `{${body.replace('"ref":"main"', '"ref":"main","ref":"dev"')}}`,
        field: 'repository.ref',
      },
      { name: '__proto__ top', text: `{"__proto__":{"polluted":1},${body}}`, field: '__proto__' },
      { name: '__proto__ in labels', text: `{${body},"labels":{"__proto__":"x"}}`, field: 'labels.__proto__' },
      { name: 'constructor key', text: `{${body},"labels":{"constructor":"x"}}`, field: 'labels.constructor' },
      { name: 'prototype key', text: `{${body},"sandbox":{"env":{"prototype":"x"}}}`, field: 'sandbox.env.prototype' },
      { name: 'escaped __proto__', text: `{"\\u005f_proto__":1,${body}}`, field: '__proto__' },
      { name: '60k keys', text: `{${many(60_000, (i) => `"k${i}":1`).join(',')}}`, field: 'keys' },
      {
        name: '60k keys in labels',
        text: `{${body},"labels":{${many(60_000, (i) => `"k${i}":"v"`).join(',')}}}`,
        field: 'labels',
      },
      { name: '150k keys', text: `{${many(150_000, (i) => `"${i}":1`).join(',')}}`, field: DOCUMENT },
      { name: 'deep arrays', text: `{${body},"labels":${'['.repeat(5000)}${']'.repeat(5000)}}`, field: 'labels' },
      { name: 'deep objects', text: `${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}`, field: 'a.a.a' },
      { name: 'not JSON', text: 'schema_version: uh.mission.v0', field: DOCUMENT },
      { name: 'trailing comma', text: `{${body},}`, field: DOCUMENT },
      { name: 'truncated', text: `{${body}`, field: DOCUMENT },
      { name: 'empty', text: '', field: DOCUMENT },
      { name: 'NaN', text: `{${body},"timeout_seconds":NaN}`, field: DOCUMENT },
      { name: 'over 1 MiB', text: `{${body},"objective":"${'x'.repeat(1_100_000)}"}`, field: DOCUMENT },
      { name: 'root array', text: '[]', field: '(root)' },
      { name: 'root null', text: 'null', field: '(root)' },
      { name: 'root string', text: '"mission"', field: '(root)' },
      { name: 'root number', text: '42', field: '(root)' },
      { name: 'NUL in ref', text: `{${body.replace('"ref":"main"', '"ref":"ma\\u0000in"')}}`, field: 'repository.ref' },
    ];
  }
  const y = toYaml(base);
  return [
    { name: 'duplicate top key', text: `${y}title: again\n`, field: 'title' },
    {
      name: 'duplicate nested key',
      text: y.replace('  ref: main\n', '  ref: main\n  ref: dev\n'),
      field: 'repository.ref',
    },
    { name: '__proto__ top', text: `__proto__:\n  polluted: 1\n${y}`, field: '__proto__' },
    { name: '__proto__ in labels', text: `${y}labels:\n  __proto__: x\n`, field: 'labels.__proto__' },
    { name: 'constructor key', text: `${y}labels:\n  constructor: x\n`, field: 'labels.constructor' },
    {
      name: 'prototype key',
      text: `${y.replace('runtime_config_overrides:\n  command:\n', 'runtime_config_overrides:\n  command:\n    prototype: {}\n')}`,
      field: 'prototype',
    },
    { name: 'quoted __proto__', text: `"__proto__": 1\n${y}`, field: '__proto__' },
    { name: '100k keys', text: many(100_000, (i) => `k${i}: 1`).join('\n'), field: 'keys' },
    { name: '60k flow keys', text: `${y}labels: {${many(60_000, (i) => `k${i}: v`).join(', ')}}\n`, field: 'keys' },
    { name: '6k keys', text: many(6_000, (i) => `k${i}: 1`).join('\n'), field: 'keys' },
    {
      name: 'billion laughs',
      text: `a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n`,
      field: DOCUMENT,
    },
    { name: '200 aliases', text: `${y}labels: &l {k: v}\nx: [${many(200, () => '*l').join(', ')}]\n`, field: DOCUMENT },
    { name: 'alias as key', text: `${y}k: &k key\nlabels: {*k : v}\n`, field: 'labels' },
    { name: 'complex key', text: `${y}? [a, b]\n: c\n`, field: '(root)' },
    { name: 'deep flow', text: `${y}labels: ${'['.repeat(3000)}${']'.repeat(3000)}\n`, field: DOCUMENT },
    {
      name: 'deep block',
      text: `${y}labels:\n${many(100, (i) => `${'  '.repeat(i + 1)}k${i}:`).join('\n')} v\n`,
      field: 'labels',
    },
    { name: 'tab indent', text: `${y}labels:\n\tk: v\n`, field: DOCUMENT },
    { name: 'unclosed quote', text: `${y}title: "open\n`, field: DOCUMENT },
    { name: 'two documents', text: `${y}---\n${y}`, field: DOCUMENT },
    { name: 'over 1 MiB', text: `${y}objective: ${'x'.repeat(1_100_000)}\n`, field: DOCUMENT },
    { name: 'empty', text: '', field: '(root)' },
    { name: 'scalar root', text: 'just text\n', field: '(root)' },
    { name: 'list root', text: '- a\n- b\n', field: '(root)' },
    { name: 'NUL byte', text: `${y}title: "a\\0b"\nx: \u0000\n`, field: DOCUMENT },
    { name: 'ref with NUL escape', text: y.replace('  ref: main\n', '  ref: "ma\\0in"\n'), field: 'repository.ref' },
    {
      name: 'ext URL',
      text: y.replace('https://example.invalid/r.git', '"ext::sh -c touch% /tmp/p"'),
      field: 'repository.url',
    },
    { name: 'custom tag', text: `${y}labels: !!js/function "function(){}"\n`, field: DOCUMENT },
  ];
}

/** The whole corpus: every mutation in each format, then the hand-written documents. */
export function buildCorpus(): BadMission[] {
  const cases: BadMission[] = [];
  for (const [name, field, mutate] of mutations()) {
    const m = validMission();
    mutate(m);
    cases.push({ name, format: 'yaml', text: toYaml(m, { lineWidth: 0 }), field });
    cases.push({ name, format: 'json', text: JSON.stringify(m), field });
    cases.push({ name, format: 'http', text: JSON.stringify(m), field });
  }
  for (const c of handWritten('yaml')) cases.push({ ...c, format: 'yaml' });
  for (const c of handWritten('json')) {
    cases.push({ ...c, format: 'json' });
    cases.push({ ...c, format: 'http' });
  }
  return cases;
}
