import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const q = load('query.ts');
const p = load('panelProtocol.ts');

test('parseEntities splits on whitespace, or on commas when there is one', () => {
  assert.deepEqual(q.parseEntities('  flamingo  zeta_ratelimit '), ['flamingo', 'zeta_ratelimit']);
  assert.deepEqual(q.parseEntities('rate  limit, flamingo,, '), ['rate limit', 'flamingo']);
  assert.deepEqual(q.parseEntities('Flamingo flamingo 缓存'), ['Flamingo', '缓存']);
  assert.deepEqual(q.parseEntities('   '), []);
});

test('validateEntities', () => {
  assert.equal(q.validateEntities('flamingo'), undefined);
  assert.match(q.validateEntities(' '), /at least one/);
  assert.match(q.validateEntities('a b c d e f g h i'), /At most 8/);
});

test('parseFromWebview accepts only known messages with a valid index', () => {
  assert.deepEqual(p.parseFromWebview({ type: 'ready' }), { type: 'ready' });
  assert.deepEqual(p.parseFromWebview({ type: 'open', index: 2, path: '/etc/passwd' }), { type: 'open', index: 2 });
  assert.equal(p.parseFromWebview({ type: 'open', index: -1 }), undefined);
  assert.equal(p.parseFromWebview({ type: 'open', index: '1' }), undefined);
  assert.equal(p.parseFromWebview({ type: 'copyResume', index: 1.5 }), undefined);
  assert.equal(p.parseFromWebview({ type: 'exec' }), undefined);
  assert.equal(p.parseFromWebview(null), undefined);
});
