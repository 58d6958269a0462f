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

test('recallText: a selection over the server\'s 100,000-character limit is cut to it, never inside a surrogate pair', () => {
  assert.equal(q.MAX_TEXT_CHARS, 100_000);
  const short = 'how did we fix the flaky timezone test?';
  assert.equal(q.recallText(short), short);
  const long = 'x'.repeat(150_000);
  assert.equal(q.recallText(long).length, 100_000);
  // 🦩 is two UTF-16 units: 100,000 characters of it are 200,000 units, and the cut keeps whole pairs
  const astral = '🦩'.repeat(100_001);
  const cut = q.recallText(astral);
  assert.equal([...cut].length, 100_000);
  assert.equal(cut.length, 200_000);
  assert.equal(q.recallText('a🦩b', 2), 'a🦩');
  assert.equal(q.recallText('🦩🦩', 1), '🦩');
  assert.equal(q.recallText('abc', 3), 'abc');
});

test('parseFromWebview accepts only known messages with a valid index', () => {
  assert.deepEqual(p.parseFromWebview({ type: 'ready' }), { type: 'ready' });
  assert.deepEqual(p.parseFromWebview({ type: 'open', index: 2, path: '/etc/passwd' }), { type: 'open', index: 2 });
  assert.equal(p.parseFromWebview({ type: 'open', index: -1 }), undefined);
  assert.equal(p.parseFromWebview({ type: 'open', index: '1' }), undefined);
  assert.equal(p.parseFromWebview({ type: 'copyResume', index: 1.5 }), undefined);
  assert.deepEqual(p.parseFromWebview({ type: 'wholeTurn', index: 0, turnId: 'x' }), { type: 'wholeTurn', index: 0 });
  assert.equal(p.parseFromWebview({ type: 'wholeTurn' }), undefined);
  assert.equal(p.parseFromWebview({ type: 'exec' }), undefined);
  assert.equal(p.parseFromWebview({ type: 'toString', index: 0 }), undefined);
  assert.equal(p.parseFromWebview(null), undefined);
});
