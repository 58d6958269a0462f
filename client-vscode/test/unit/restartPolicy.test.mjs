import assert from 'node:assert/strict';
import { test } from 'node:test';
import { load } from './load.mjs';

const { RestartPolicy } = load('restartPolicy.ts');
const MINUTE = 60_000;

test('an exit is restarted and announced once per burst, then the restarts stop', () => {
  const policy = new RestartPolicy(3, 3 * MINUTE);
  assert.deepEqual(policy.onExit(0), { restart: true, tellUser: true });
  assert.deepEqual(policy.onExit(10_000), { restart: true, tellUser: false });
  assert.deepEqual(policy.onExit(20_000), { restart: true, tellUser: false });
  assert.deepEqual(policy.onExit(30_000), { restart: false, exits: 4 });
});

test('after a quiet window an exit is announced again; reset forgets earlier exits', () => {
  const policy = new RestartPolicy(3, 3 * MINUTE);
  policy.onExit(0);
  policy.onExit(MINUTE);
  assert.deepEqual(policy.onExit(3 * MINUTE), { restart: true, tellUser: false }); // the exit at 0 is out, the one at 1 min in
  assert.deepEqual(policy.onExit(20 * MINUTE), { restart: true, tellUser: true });
  policy.onExit(20 * MINUTE + 1);
  policy.onExit(20 * MINUTE + 2);
  policy.reset();
  assert.deepEqual(policy.onExit(20 * MINUTE + 3), { restart: true, tellUser: true });
});
