// A sync that takes a while shows a cancellable progress notification; Cancel stops the server's sync through
// the work-done progress token of pimem/syncStatus, and the next sync finishes the job. The sync has two
// phases (store the files' turns, then index them); Cancel may land in either, and either way something
// must be left for Sync Now: turns not stored yet, or stored turns not indexed yet.
// The histories are a synthetic corpus in the agents' real formats (bench/generate.py), large enough for a
// sync of several seconds.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  clearNotifications,
  folderUrl,
  notification,
  QUIET_WORKBENCH_SETTINGS,
  repoDir,
  runCommand,
  screenshot,
  startVsCode,
} from './harness.mjs';

// ~800 MB of transcripts. The notification opens 2 s into the sync; with 20,000 turns the files phase took
// about 2 s here, so on a faster CI machine the notification opened in the indexing phase, and the whole sync
// (about 6 s) left little time for the click. Twice that leaves several seconds in either phase.
const TURNS = 40000;

describe('Pi Memory sync progress and cancel', { timeout: 300_000 }, () => {
  let vs;
  let page;
  let workspace;
  let expectedTurns;

  before(async () => {
    vs = await startVsCode({
      name: 'sync-cancel',
      prepareHome: (home) => {
        const run = dirname(home);
        const corpus = join(run, 'corpus');
        execFileSync('python3', [join(repoDir, 'bench', 'generate.py'), '--out', corpus, '--turns', String(TURNS), '--jobs', '2'], {
          stdio: 'pipe',
        });
        const manifest = JSON.parse(readFileSync(join(corpus, 'manifest.json'), 'utf8'));
        expectedTurns = Object.values(manifest.agents).reduce((sum, agent) => sum + agent.turns, 0);
        for (const dir of ['.claude', '.codex', '.pi']) {
          symlinkSync(join(corpus, 'home', dir), join(home, dir));
        }
        workspace = join(run, 'project');
        mkdirSync(workspace);
      },
      settings: (dirs) => ({
        ...QUIET_WORKBENCH_SETTINGS,
        'pimem.dbPath': join(dirs.run, 'memory.db'),
      }),
    });
    page = vs.page;
  });

  after(async () => {
    await vs?.stop();
  });

  it('cancels a long sync from its notification, and Sync Now finishes it', async () => {
    await page.goto(folderUrl(vs.port, workspace));
    await page.locator('.statusbar-item', { hasText: /Pi Memory: syncing \d+\/\d+/ }).waitFor({ timeout: 60_000 });
    // The notification opens in whichever phase is running by then: files, or indexing the stored turns.
    const toast = notification(page, /Pi Memory: syncing transcripts: (\d+\/\d+ files|indexing \d+\/\d+ turns)/);
    await toast.first().waitFor({ timeout: 15_000 });
    await screenshot(page, 'sync-progress.png');
    await toast.first().locator('a.monaco-button, button', { hasText: 'Cancel' }).click();

    const count = page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ });
    await count.waitFor({ timeout: 30_000 });
    const partial = Number((await count.innerText()).trim().split(' ')[0]);

    await runCommand(page, 'Pi Memory: Show Status');
    const status = notification(page, /Pi Memory: \d+ turns? in \d+ sessions?/);
    await status.first().waitFor({ timeout: 15_000 });
    const statusText = await status.first().innerText();
    assert.match(statusText, /last sync .*\(cancelled\)/);
    const unindexed = /(\d+) turns? not indexed yet/.exec(statusText);
    assert.ok(
      partial < expectedTurns || (unindexed && Number(unindexed[1]) > 0),
      `the cancelled sync stopped early (${partial} of ${expectedTurns} turns stored; ${unindexed?.[0] ?? 'all indexed'})`,
    );
    await clearNotifications(page);

    await runCommand(page, 'Pi Memory: Sync Now');
    const synced = notification(page, /Pi Memory: synced \d+ transcript files?: \d+ turns? added or updated/);
    await synced.first().waitFor({ timeout: 120_000 });
    await page.locator('.statusbar-item', { hasText: new RegExp(`^\\s*${expectedTurns} turns\\s*$`) }).waitFor({ timeout: 30_000 });
    await clearNotifications(page);
    await runCommand(page, 'Pi Memory: Show Status');
    await status.first().waitFor({ timeout: 15_000 });
    const after = await status.first().innerText();
    assert.doesNotMatch(after, /not indexed yet/, 'Sync Now finished the index');
    assert.doesNotMatch(after, /\(cancelled\)/);
  });
});
