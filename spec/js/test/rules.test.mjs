// The parts of the guide a vector file cannot show: reading numbers exactly from JSON text,
// the glob definition case by case, and the command line.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { canonical, compareUtf8, dna, globs, parseJson } from '../dna.mjs';

const SCRIPT = fileURLToPath(new URL('../dna.mjs', import.meta.url));
const BASE = '"schema_version": "1.1", "run_id": "r", "generated_at": "2026-01-01T00:00:00Z"';

test('integers beyond 2^53 - 1 stay exact and are written as strings', () => {
  const doc = parseJson('{"a": 9007199254740993, "b": 9007199254740991, "c": -9007199254740993, "d": 1.0}');
  assert.equal(doc.a, 9007199254740993n);
  assert.equal(doc.b, 9007199254740991);
  assert.equal(canonical(doc), '{"a":"9007199254740993","b":9007199254740991,"c":"-9007199254740993","d":1}');
});

test('a number too large for a double is infinity, written as its marker', () => {
  assert.equal(canonical(parseJson('[1e400, -1e400, 1E30, 4.50, 0.0000001, -0]')), '["<non-finite:inf>","<non-finite:-inf>",1e+30,4.5,1e-7,0]');
});

test('the reader refuses what a manifest reader refuses', () => {
  for (const text of ['{"a": 1, "a": 2}', '{"a": NaN}', '[1,]', '{"a": 1} x', '01']) {
    assert.throws(() => parseJson(text), SyntaxError, text);
  }
  assert.equal(Object.keys(parseJson('{"__proto__": 1}'))[0], '__proto__');
});

test('strings sort by UTF-8 bytes, not UTF-16 code units', () => {
  const names = ['\u{1F600}', '\uFF5E', 'z'];
  assert.deepEqual([...names].sort(compareUtf8), ['z', '\uFF5E', '\u{1F600}']);
  assert.deepEqual([...names].sort(), ['z', '\u{1F600}', '\uFF5E']); // what sort() would do
});

const GLOBS = [
  ['config.*', 'config.resolved_args.seed', true],
  ['hardware', 'hardware.gpus', false],
  ['a?c', 'a\u{1F600}c', true],
  ['[!a]x', 'bx', true],
  ['[!a]x', 'ax', false],
  ['[]]', ']', true],
  ['[!]]', 'a', true],
  ['[a-c]', 'b', true],
  ['[c-a]', 'b', false],
  ['[c-ax]', 'x', true],
  ['[!c-a]', 'q', true],
  ['[a-]', '-', true],
  ['[--a]', '0', true],
  ['[a', '[a', true],
  ['a\\*', 'a\\bc', true],
  ['A*', 'a', false],
  ['x*', 'x\ny', true],
];

for (const [pattern, name, expected] of GLOBS) {
  test(`glob ${JSON.stringify(pattern)} on ${JSON.stringify(name)}`, () => {
    assert.equal(globs([pattern]).test(name), expected);
  });
}

test('the command line prints the DNA, the sections and the family', () => {
  const dir = mkdtempSync(join(tmpdir(), 'dna-'));
  const path = join(dir, 'm.json');
  writeFileSync(path, `{${BASE}, "config": {"resolved_args": {"seed": 1, "lr": 0.1}}}`);
  const expected = dna(parseJson(`{${BASE}, "config": {"resolved_args": {"seed": 1, "lr": 0.1}}}`));
  assert.equal(execFileSync('node', [SCRIPT, path], { encoding: 'utf8' }), `${expected.value}\n`);
  const lines = execFileSync('node', [SCRIPT, path, '--sections', '--family'], { encoding: 'utf8' }).trim().split('\n');
  assert.equal(lines.length, 9);
  assert.equal(lines[0], `code         ${expected.sections.code}`);
  assert.equal(lines[7], `dna          ${expected.value}`);
  assert.match(lines[8], /^family {7}[0-9a-f]{64}$/);
  const v1 = execFileSync('node', [SCRIPT, path, '--dna-version', '1'], { encoding: 'utf8' }).trim();
  assert.equal(v1, dna(parseJson(`{${BASE}, "config": {"resolved_args": {"seed": 1, "lr": 0.1}}}`), { version: 1 }).value);
  const bad = spawnSync('node', [SCRIPT, join(dir, 'missing.json')], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.match(bad.stderr, /missing\.json/);
});
