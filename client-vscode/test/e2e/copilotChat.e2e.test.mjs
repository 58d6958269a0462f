// End-to-end: a Copilot Chat session of the open workspace, found by Pi Memory, opens in VS Code's own chat
// (issue 22 "Resume"): the session's log is written into this window's workspace storage
// (<User>/workspaceStorage/<this workspace>/chatSessions/<id>.jsonl, the VS Code chat session log format),
// Pi Memory imports it (PIMEM_VSCODE_USER_DIRS: code-server's User folder), and the result's "Open in Copilot
// Chat" button opens a chat editor that VS Code restored from that file.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { folderUrl, QUIET_WORKBENCH_SETTINGS, runCommand, screenshot, searchFrame, startVsCode } from './harness.mjs';

const WORKSPACE = '/tmp/pimem-demo/chatlab';
const SESSION = '5d1c2b3a-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
const PROMPT = 'How do we rotate the quokka77 signing key?';

function chatLog() {
  const request = {
    requestId: 'request_5d1c', timestamp: Date.now(), message: { text: PROMPT, parts: [] },
    response: [{ value: 'Rotate it with the keyring tool, then redeploy.' }], variableData: { variables: [] },
  };
  const entries = [
    { kind: 0, v: { version: 3, sessionId: SESSION, creationDate: Date.now(), initialLocation: 'panel', requests: [] } },
    { kind: 2, k: ['requests'], v: [request] },
  ];
  return entries.map((e) => `${JSON.stringify(e)}\n`).join('');
}

describe('Copilot Chat sessions open in VS Code\'s chat', { timeout: 600_000 }, () => {
  let vs;
  let page;
  let createdWorkspace = false;
  const saved = process.env.PIMEM_VSCODE_USER_DIRS;

  before(async () => {
    createdWorkspace = !existsSync(WORKSPACE);
    mkdirSync(WORKSPACE, { recursive: true });
    writeFileSync(join(WORKSPACE, 'notes.txt'), 'chat lab\n');
    vs = await startVsCode({
      name: 'copilot-chat',
      prepareHome: () => undefined,
      settings: (dirs) => {
        // read when code-server's environment is made (just after the settings): the server reads this User folder
        process.env.PIMEM_VSCODE_USER_DIRS = join(dirs.userData, 'User');
        return { ...QUIET_WORKBENCH_SETTINGS, 'chat.disableAIFeatures': false, 'pimem.dbPath': join(dirs.run, 'memory.db') };
      },
    });
    page = vs.page;
  });

  after(async () => {
    if (saved === undefined) {
      delete process.env.PIMEM_VSCODE_USER_DIRS;
    } else {
      process.env.PIMEM_VSCODE_USER_DIRS = saved;
    }
    await vs?.stop();
    if (createdWorkspace) {
      rmSync(WORKSPACE, { recursive: true, force: true });
    }
  });

  it('"Open in Copilot Chat" opens the session restored by VS Code from this workspace\'s store', async () => {
    await page.goto(folderUrl(vs.port, WORKSPACE));
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'notes.txt' }).waitFor({ timeout: 90_000 });
    await page.locator('.statusbar-item', { hasText: /^\s*\d+ turns?\s*$/ }).waitFor({ timeout: 120_000 });
    // this window's workspace storage: the one folder VS Code made under workspaceStorage for the opened folder
    const storage = join(vs.dirs.userData, 'User', 'workspaceStorage');
    let folders = [];
    for (let i = 0; i < 100 && folders.length === 0; i++) {
      folders = existsSync(storage) ? readdirSync(storage).filter((n) => n !== 'no-workspace') : [];
      await page.waitForTimeout(200);
    }
    assert.equal(folders.length, 1, `workspace storage folders: ${folders}`);
    const sessions = join(storage, folders[0], 'chatSessions');
    mkdirSync(sessions, { recursive: true });
    writeFileSync(join(sessions, `${SESSION}.jsonl`), chatLog());
    await runCommand(page, 'Pi Memory: Sync Now');
    await page.locator('.activitybar .action-item a[aria-label^="Pi Memory"]').first().waitFor({ timeout: 30_000 });
    await page.keyboard.press('Control+Alt+Shift+M');
    const sf = () => searchFrame(page);
    await sf().locator('#query:focus').waitFor({ timeout: 30_000 });
    await page.keyboard.type('quokka77', { delay: 40 });
    const card = sf().locator('#results > li.card[data-source="copilot-chat"]').first();
    await card.waitFor({ timeout: 60_000 });
    const button = card.locator('button.resume');
    assert.equal(await button.innerText(), 'Open in Copilot Chat');
    await button.click();
    // VS Code's chat editor for the session: its title and its reply, read by VS Code from the log
    await page.locator('.tabs-container .tab', { hasText: 'How do we rotate the quokka77' }).first().waitFor({ timeout: 60_000 });
    await page.locator('.part.editor', { hasText: 'Rotate it with the keyring tool, then redeploy.' }).first().waitFor({ timeout: 60_000 });
    await screenshot(page, 'copilot-chat-open.png');
  });
});
