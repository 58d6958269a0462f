// A sync the store stops (the store file replaced by another program's SQLite database while the editor
// runs) must reach the user once, not only the server log: a live update after a transcript grows fails
// with the store's one line (pimem/syncStatus `error`), and the extension says "Pi Memory could not sync".
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { appendFileSync, cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { folderUrl, notificationText, QUIET_WORKBENCH_SETTINGS, repoDir, screenshot, startVsCode } from './harness.mjs';

const samples = join(repoDir, 'samples', 'history');
const PROBE =
  '{"type":"message","id":"e2estorefail","parentId":null,"timestamp":"2026-11-30T10:00:00.000Z",' +
  '"message":{"role":"user","content":"store failure probe","timestamp":1796032800000}}\n';

describe('Pi Memory when the store cannot be used', { timeout: 300_000 }, () => {
  let vs;
  let page;
  let home;
  let db;
  let workspace;

  before(async () => {
    vs = await startVsCode({
      name: 'store-failure',
      prepareHome: (dir) => {
        home = dir;
        cpSync(join(samples, 'pi'), join(dir, '.pi'), { recursive: true });
        workspace = join(dir, '..', 'project');
        mkdirSync(workspace, { recursive: true });
      },
      settings: (dirs) => {
        db = join(dirs.run, 'memory.db');
        return { ...QUIET_WORKBENCH_SETTINGS, 'pimem.dbPath': db };
      },
    });
    page = vs.page;
  });

  after(async () => {
    await vs?.stop();
  });

  it('says once that a live sync stopped because the store is not usable', async () => {
    await page.goto(folderUrl(vs.port, workspace));
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 120_000 });
    assert.ok(existsSync(db), 'the first sync created the store');

    // Another program's database in the store's place (what a mistyped or reused path looks like).
    const foreign = `${db}.foreign`;
    execFileSync('python3', ['-I', '-c', 'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("create table t(x)"); c.commit()', foreign]);
    for (const suffix of ['-wal', '-shm']) {
      rmSync(`${db}${suffix}`, { force: true });
    }
    renameSync(foreign, db);

    // A transcript grows: the watcher's live sync opens the store and is refused.
    const sessions = join(home, '.pi', 'agent', 'sessions');
    const folder = readdirSync(sessions).find((name) => name.includes('webshop'));
    assert.ok(folder, 'a Pi sample session folder');
    const file = readdirSync(join(sessions, folder)).find((name) => name.endsWith('.jsonl'));
    appendFileSync(join(sessions, folder, file), PROBE);

    const text = await notificationText(page, /Pi Memory could not sync/, { timeout: 90_000 });
    await screenshot(page, 'store-failure.png');
    assert.match(text, /another program's SQLite database/);
    assert.match(text, /Show Status/);
  });
});
