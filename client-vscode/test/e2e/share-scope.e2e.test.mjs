// End-to-end test of the sidebar's scope switch (issue 24) in a real VS Code: with a shared store configured
// (`<store>-share.json`, as `pimem share config --conninfo … --folder …` writes it) whose PostgreSQL cannot be
// reached, the switch appears; "All" still shows this machine's turns, and the view says the shared part is
// missing. (Without a configuration the switch stays hidden: search.e2e.test.mjs.) The extension's package has no
// PostgreSQL driver: the server runs with an interpreter that has psycopg (the repository's .venv, or
// $PIMEM_E2E_SHARE_PYTHON), and the test is skipped, saying so, when there is none.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { CODEX_PROMPT, writeLineEditHistory } from './lineEdits.mjs';
import { folderUrl, QUIET_WORKBENCH_SETTINGS, repoDir, runCommand, screenshot, searchFrame, startVsCode } from './harness.mjs';

const python = process.env.PIMEM_E2E_SHARE_PYTHON ?? join(repoDir, '.venv', 'bin', 'python');
const noDriver = (() => {
  try {
    execFileSync(python, ['-I', '-c', 'import psycopg'], { stdio: 'ignore' });
    return false;
  } catch {
    return `no interpreter with psycopg at ${python} (make setup, or PIMEM_E2E_SHARE_PYTHON)`;
  }
})();

describe('Pi Memory sidebar with a shared memory that cannot be reached', { timeout: 600_000, skip: noDriver }, () => {
  let vs;
  let page;
  let fixture;

  before(async () => {
    vs = await startVsCode({
      name: 'share-scope',
      prepareHome: (home) => {
        fixture = writeLineEditHistory(home);
        // port 9 (discard) on loopback: nothing listens, the connection is refused at once
        writeFileSync(join(dirname(home), 'memory-share.json'), JSON.stringify({
          conninfo: 'host=127.0.0.1 port=9 dbname=team user=ana connect_timeout=2', machine: 'e2e-box',
          folders: [fixture.workspace], sources: [], auto: false,
        }));
      },
      settings: (dirs) => ({ ...QUIET_WORKBENCH_SETTINGS, 'pimem.python': python, 'pimem.dbPath': join(dirs.run, 'memory.db') }),
    });
    page = vs.page;
  });

  after(async () => {
    await screenshot(page, 'share-scope.png').catch(() => undefined);
    await vs?.stop();
  });

  it('shows the scope switch, and "All" answers with this machine\'s turns and says the shared part is missing', async () => {
    await page.goto(folderUrl(vs.port, fixture.workspace));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'README.md' }).waitFor({ timeout: 90_000 });
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 120_000 });
    await runCommand(page, 'Pi Memory: Search Past Conversations in the Sidebar');
    const sf = searchFrame(page);
    await sf.locator('#scopeLabel').waitFor({ state: 'visible', timeout: 60_000 });
    assert.equal(await sf.locator('#scope').inputValue(), 'local');

    await sf.locator('#scope').selectOption('all');
    const box = sf.locator('#query');
    await box.fill('discount');
    await box.press('Enter');
    const card = sf.locator('#results > li.card', { hasText: CODEX_PROMPT });
    await card.first().waitFor({ timeout: 60_000 });
    await sf.locator('#count .note', { hasText: /cannot be reached|did not answer/ }).waitFor({ timeout: 30_000 });
    assert.match(await sf.locator('#count').innerText(), /this machine's turns only/);
    // this machine's rows name no author
    assert.equal(await sf.locator('#results .author').count(), 0);
    await screenshot(page, 'share-scope-all.png');
  });
});
