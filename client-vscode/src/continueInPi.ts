// "Continue in Pi" on a Codex session: pimem/migrateCodex {sessionId} writes that one session as a Pi session
// (its cwd decides the Pi folder), then the user is offered to resume it in Pi, in a terminal in its folder.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { isCodexSessionId, migratedResume, sessionIdArgument } from './historyArgs';
import { MigrateCodexRequest, type MigrationReport } from './protocol';
import { plainText } from './render';
import { describeError, type PimemServer } from './server';

/** Migrates one Codex session and offers to resume it in Pi. Arguments: {sessionId} (or the id itself). */
export async function continueInPi(server: PimemServer, log: vscode.LogOutputChannel, raw: unknown): Promise<void> {
  const sessionId = sessionIdArgument(raw);
  if (!isCodexSessionId(sessionId)) {
    void vscode.window.showWarningMessage('Pi Memory: "Continue in Pi" works on a Codex session.');
    return;
  }
  let report: MigrationReport | undefined;
  try {
    const result = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: 'Pi Memory: writing the Codex session as a Pi session', cancellable: true },
      (_progress, token) => server.request(MigrateCodexRequest, { sessionId, dryRun: false }, token),
    );
    report = result.reports[0];
  } catch (error) {
    void vscode.window.showErrorMessage(`Pi Memory: Continue in Pi failed: ${describeError(error)}`);
    return;
  }
  const outcome = report === undefined ? undefined : migratedResume(report);
  if (report === undefined || outcome === undefined) {
    void vscode.window.showWarningMessage('Pi Memory: the Codex session could not be migrated (see the Pi Memory log).');
    return;
  }
  log.info(`Continue in Pi: ${sessionId} ${outcome.fresh ? 'migrated' : `skipped (${outcome.reason ?? ''})`} for ${report.folder}`);
  if (outcome.command === undefined) {
    const why = outcome.reason !== undefined ? `: ${plainText(outcome.reason, 120)}` : '';
    void vscode.window.showWarningMessage(`Pi Memory: the Codex session was not continued in Pi${why}.`);
    return;
  }
  const message = outcome.fresh
    ? 'Pi Memory: the Codex session is now a Pi session. Resume it in Pi?'
    : 'Pi Memory: this Codex session was migrated to Pi before. Resume it in Pi?';
  const choice = await vscode.window.showInformationMessage(message, 'Resume in Terminal', 'Copy Resume Command');
  if (choice === 'Resume in Terminal') {
    const cwd = fs.existsSync(report.folder) ? report.folder : undefined; // else the terminal would not start
    const terminal = vscode.window.createTerminal({ name: 'Pi', cwd });
    terminal.show();
    terminal.sendText(outcome.command, true);
  } else if (choice === 'Copy Resume Command') {
    await vscode.env.clipboard.writeText(outcome.command);
    void vscode.window.showInformationMessage('Pi Memory: resume command copied to the clipboard.');
  }
}
