// Every DNA vector in tests/vectors/dna, recomputed from its manifest by this implementation:
// the projections, the section digests, the DNA and the family digest must all match.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { canonical, dna, family, parseJson } from '../dna.mjs';

const VECTORS = fileURLToPath(new URL('../../../tests/vectors/dna/', import.meta.url));
const files = readdirSync(VECTORS).filter((name) => name.endsWith('.json')).sort();

test('the vector directory holds the vectors', () => {
  assert.ok(files.length >= 20, `only ${files.length} vectors in ${VECTORS}`);
});

for (const file of files) {
  test(`vector ${file}`, () => {
    const vector = parseJson(readFileSync(join(VECTORS, file), 'utf8'));
    const version = vector.dna_version;
    const result = dna(vector.manifest, { version });
    for (const [name, projected] of Object.entries(vector.projections)) {
      assert.equal(canonical(result.projections[name]), canonical(projected), `projection of ${name}`);
    }
    assert.deepEqual({ ...result.sections }, { ...vector.sections });
    assert.equal(result.value, vector.dna);
    assert.equal(result.version, version);
    assert.equal(family(vector.manifest, { version }), vector.family);
  });
}
