// Opening a hostile folder runs none of its code (issue 10, item 1), stored values shown in notifications render
// no links (item 2), and a server that exits is restarted with one notice (item 7). The folder holds Python
// modules the server imports (pimem/, json.py, uuid.py, sqlite3.py, watchdog/, …), a fake `.venv/bin/python`
// and workspace settings pointing pimem at them; each of them writes a marker file outside the folder when it
// runs. The folder opens in Restricted Mode first, then is trusted.
import assert from 'node:assert/strict';
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { after, afterEach, before, describe, it } from 'node:test';
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

const samples = join(repoDir, 'samples', 'history');
const TRAPS = [
  'pimem/__init__.py', 'pimem/__main__.py', 'pimem/cli.py', 'json.py', 'uuid.py', 'sqlite3.py', 'watchdog/__init__.py',
  'pygls/__init__.py', 'lsprotocol/__init__.py', 'asyncio.py', 'logging.py', 'sitecustomize.py', 'usercustomize.py',
];
// A folder name that notifications would render as a command link, in the user's pimem.dbPath.
const LINK_DIR = '[Run this](command:pimem.restart)';
const RESTART_NOTICE = 'The Pi Memory server stopped unexpectedly and was restarted.';

describe('Pi Memory with a hostile workspace folder', { timeout: 600_000 }, () => {
  let vs;
  let page;
  let base;
  let workspace;
  let markers;
  let dbPath;
  let turns;

  before(async () => {
    base = mkdtempSync('/tmp/pimem-e2e-hostile-');
    workspace = join(base, 'repo');
    markers = join(base, 'markers');
    mkdirSync(markers);
    plantTraps();
    vs = await startVsCode({
      name: 'workspace-safety',
      workspaceTrust: true,
      prepareHome: (home) => {
        cpSync(join(samples, 'claude'), join(home, '.claude'), { recursive: true });
        cpSync(join(samples, 'codex'), join(home, '.codex'), { recursive: true });
        cpSync(join(samples, 'pi'), join(home, '.pi'), { recursive: true });
      },
      settings: (dirs) => {
        dbPath = join(dirs.run, LINK_DIR, 'memory.db');
        mkdirSync(join(dirs.run, LINK_DIR));
        return {
          ...QUIET_WORKBENCH_SETTINGS,
          'security.workspace.trust.enabled': true,
          'security.workspace.trust.startupPrompt': 'never',
          'security.workspace.trust.banner': 'never',
          'pimem.dbPath': dbPath,
        };
      },
    });
    page = vs.page;
  });

  let step = 0;
  afterEach(async () => {
    step += 1;
    await screenshot(page, `workspace-safety-${step}.png`).catch(() => undefined);
  });

  after(async () => {
    await vs?.stop();
    rmSync(base, { recursive: true, force: true });
  });

  function plantTraps() {
    const trap = (name) => `open(${JSON.stringify(join(markers, `${name.replaceAll('/', '_')}.ran`))}, 'w').close()\n`;
    for (const relative of TRAPS) {
      mkdirSync(join(workspace, relative, '..'), { recursive: true });
      writeFileSync(join(workspace, relative), trap(relative));
    }
    const python = join(workspace, '.venv', 'bin', 'python');
    mkdirSync(join(python, '..'), { recursive: true });
    writeFileSync(python, `#!/bin/sh\ntouch '${join(markers, 'venv-python.ran')}'\nexit 1\n`);
    chmodSync(python, 0o755);
    mkdirSync(join(workspace, '.vscode'));
    writeFileSync(
      join(workspace, '.vscode', 'settings.json'),
      JSON.stringify({ 'pimem.python': python, 'pimem.dbPath': join(workspace, 'workspace.db') }),
    );
    writeFileSync(join(workspace, 'README.md'), 'A repository with files named like Python modules.\n');
  }

  function ranMarkers() {
    return readdirSync(markers).sort();
  }

  /** The running server processes of this VS Code: pid, argv and working directory, newest last. */
  function serverProcesses() {
    const found = [];
    for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
      try {
        const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((a) => a.length > 0);
        const script = argv.find((a) => a.startsWith(vs.dirs.extensions) && a.endsWith(join('launcher', 'launch.py')));
        if (script !== undefined && basename(readlinkSync(`/proc/${pid}/exe`)).startsWith('python')) {
          found.push({ pid: Number(pid), argv, cwd: readlinkSync(`/proc/${pid}/cwd`), script });
        }
      } catch {
        // exited meanwhile, or not ours to read
      }
    }
    return found.sort((a, b) => a.pid - b.pid);
  }

  async function waitForServer(notPid, timeout = 60_000) {
    const deadline = Date.now() + timeout;
    while (Date.now() < deadline) {
      const fresh = serverProcesses().filter((p) => p.pid !== notPid);
      if (fresh.length === 1) {
        return fresh[0];
      }
      await page.waitForTimeout(250);
    }
    throw new Error(`no new server process within ${timeout} ms: ${JSON.stringify(serverProcesses())}`);
  }

  /** The turn count in the status bar once the server has synced; fails at once when workspace code ran. */
  async function turnCount(timeout = 120_000) {
    const item = page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ });
    const deadline = Date.now() + timeout;
    while ((await item.count()) === 0) {
      assert.deepEqual(ranMarkers(), [], 'code from the workspace ran');
      assert.ok(Date.now() < deadline, `no turn count in the status bar within ${timeout} ms`);
      await page.waitForTimeout(250);
    }
    return Number((await item.first().innerText()).trim().split(' ')[0]);
  }

  /**
   * Show Status once the server answers: its notification's text, and the links rendered in its message. Right
   * after a restart the status bar can still show the old count while the server starts ("Pi Memory server
   * starting."): then it is asked again.
   */
  async function showStatus(timeout = 90_000) {
    const status = notification(page, /Pi Memory: \d+ turns? in \d+ sessions?/).first();
    const notYet = notification(page, /Pi Memory server (starting|stopped|not running)/).first();
    const deadline = Date.now() + timeout;
    for (;;) {
      await clearNotifications(page);
      await runCommand(page, 'Pi Memory: Show Status');
      const shown = await Promise.race([
        status.waitFor({ timeout: 30_000 }).then(() => 'status'),
        notYet.waitFor({ timeout: 30_000 }).then(() => 'not yet'),
      ]).catch(() => 'nothing');
      if (shown === 'status') {
        break;
      }
      assert.ok(Date.now() < deadline, `Show Status gave no status within ${timeout} ms (last: ${shown})`);
      await page.waitForTimeout(1000);
    }
    const links = await status.locator('.notification-list-item-message a').evaluateAll((els) => els.map((e) => e.outerHTML));
    return { text: await status.innerText(), links };
  }

  function assertServerIsolated(server) {
    // the same command line src/launch.ts builds from src/serverLaunch.json, run from the extension folder
    assert.deepEqual(server.argv.slice(1), ['-I', '-u', server.script, 'serve']);
    assert.equal(server.cwd, join(server.script, '..', '..'));
    assert.ok(!server.cwd.startsWith(workspace), server.cwd);
  }

  it('in Restricted Mode: the server runs, nothing of the folder ran, and a path shows as text', async () => {
    await page.goto(folderUrl(vs.port, workspace));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'README.md' }).waitFor({ timeout: 90_000 });
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ timeout: 30_000 });
    turns = await turnCount();
    assert.ok(turns >= 10, `the sample histories give at least 10 turns, got ${turns}`);

    const { text, links } = await showStatus();
    assert.deepEqual(links, [], 'no link in the status message');
    assert.ok(text.includes(`Pi Memory: ${turns} turns in `), text);
    // the user's dbPath, not the workspace's; its "[…](command:…)" is plain text
    assert.ok(text.replaceAll('\u200b', '').includes(`Database: ${dbPath}.`), text);
    await screenshot(page, 'restricted-mode-status.png');

    assertServerIsolated(await waitForServer(undefined));
    assert.deepEqual(ranMarkers(), []);
  });

  it('trusted: the server restarts, still runs nothing of the folder', async () => {
    const before = await waitForServer(undefined);
    // Trusted, the workspace's own settings would choose its (fake) interpreter, as the user allowed; the
    // point here is that the server itself imports nothing from the folder.
    rmSync(join(workspace, '.vscode'), { recursive: true });
    await runCommand(page, 'Workspaces: Manage Workspace Trust');
    const trust = page.locator('.workspace-trust-editor .monaco-button', { hasText: /^Trust$/ }).first();
    await trust.waitFor({ timeout: 30_000 });
    await trust.click();
    await page.locator('.statusbar-item', { hasText: 'Restricted Mode' }).first().waitFor({ state: 'detached', timeout: 30_000 });
    await page.keyboard.press('Control+W');
    const after = await waitForServer(before.pid);
    assertServerIsolated(after);
    assert.equal(await turnCount(), turns);
    const { text, links } = await showStatus();
    assert.ok(text.includes(`Pi Memory: ${turns} turns in `), text);
    assert.deepEqual(links, []);
    assert.deepEqual(ranMarkers(), []);
    await clearNotifications(page);
  });

  it('a server that exits is restarted, and the user is told once', async () => {
    let server = await waitForServer(undefined);
    for (let exit = 1; exit <= 2; exit++) {
      process.kill(server.pid, 'SIGKILL');
      server = await waitForServer(server.pid);
      assertServerIsolated(server);
      assert.equal(await turnCount(), turns);
      if (exit === 1) {
        const notice = notification(page, RESTART_NOTICE);
        await notice.first().waitFor({ timeout: 30_000 });
        await screenshot(page, 'server-restarted.png');
      }
    }
    // the second exit was restarted silently: one notice in the notification center, and the server answers
    await runCommand(page, 'Notifications: Show Notifications');
    const center = page.locator('.notifications-center .notification-list-item', { hasText: RESTART_NOTICE });
    await center.first().waitFor({ timeout: 10_000 });
    assert.equal(await center.count(), 1);
    await runCommand(page, 'Notifications: Hide Notifications');
    const { text } = await showStatus();
    assert.ok(text.includes(`Pi Memory: ${turns} turns in `), text);
    assert.deepEqual(ranMarkers(), []);
  });
});
