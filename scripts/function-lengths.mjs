#!/usr/bin/env node
/**
 * Lists every function in src/ longer than the limit (default 80 lines), longest first.
 * Functions are counted by the TypeScript parser: declarations, methods, arrows and function
 * expressions, from their first to their last line. A nested function counts towards its
 * parent too, so a parent that is long only because of what it defines is still long.
 *
 *   node scripts/function-lengths.mjs [--max 80] [--json] [dir …]
 *
 * Exit 1 when any function is over the limit, so it can gate CI.
 */
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export function longFunctions(roots, max) {
  const found = [];
  for (const file of roots.flatMap(tsFiles)) {
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true);
    const visit = (node) => {
      if (ts.isFunctionLike(node) && 'body' in node && node.body) {
        const start = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const end = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = end - start + 1;
        if (lines > max)
          found.push({ file: relative(process.cwd(), file), line: start + 1, name: nameOf(node), lines });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found.sort((a, b) => b.lines - a.lines);
}

function nameOf(node) {
  if (node.name && ts.isIdentifier(node.name)) return node.name.text;
  const parent = node.parent;
  if (parent && ts.isVariableDeclaration(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  if (parent && ts.isPropertyAssignment(parent) && ts.isIdentifier(parent.name)) return parent.name.text;
  return '<anonymous>';
}

function tsFiles(dir) {
  if (statSync(dir).isFile()) return dir.endsWith('.ts') ? [dir] : [];
  return readdirSync(dir).flatMap((name) => tsFiles(join(dir, name)));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const maxAt = args.indexOf('--max');
  const max = maxAt >= 0 ? Number(args.splice(maxAt, 2)[1]) : 80;
  const jsonAt = args.indexOf('--json');
  if (jsonAt >= 0) args.splice(jsonAt, 1);
  const found = longFunctions(args.length > 0 ? args : ['src'], max);
  if (jsonAt >= 0) console.log(JSON.stringify(found));
  else for (const f of found) console.log(`${f.lines}\t${f.file}:${f.line}\t${f.name}`);
  process.exitCode = found.length > 0 ? 1 : 0;
}
