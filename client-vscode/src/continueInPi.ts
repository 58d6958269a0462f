// "Continue in Pi" on a Codex session: pimem/migrateCodex {sessionId} writes that one session as a Pi session
// (its cwd decides the Pi folder), then the user is offered to resume it in Pi: a terminal in its folder whose
// process is Pi itself (src/rowActions.ts runResume), or the command copied.
import * as vscode from 'vscode';
import { isCodexSessionId, migratedResume, sessionIdArgument } from './historyArgs';
import { MigrateCodexRequest, type MigrationReport } from './protocol';
import { plainText } from './render';
import { runResume } from './rowActions';
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
  const { command, resume } = outcome;
  if (command === undefined && resume === undefined) {
    const why = outcome.reason !== undefined ? `: ${plainText(outcome.reason, 120)}` : '';
    void vscode.window.showWarningMessage(`Pi Memory: the Codex session was not continued in Pi${why}.`);
    return;
  }
  const message = outcome.fresh
    ? 'Pi Memory: the Codex session is now a Pi session. Resume it in Pi?'
    : 'Pi Memory: this Codex session was migrated to Pi before. Resume it in Pi?';
  const copy = command === undefined ? undefined : () => copyCommand(command);
  const choices = [...(resume === undefined ? [] : ['Resume in Terminal']), ...(copy === undefined ? [] : ['Copy Resume Command'])];
  const choice = await vscode.window.showInformationMessage(message, ...choices);
  if (choice === 'Resume in Terminal' && resume !== undefined) {
    // Pi is the terminal's own process, the session file its argument: no shell reads the stored path or folder
    runResume(resume, log, copy);
  } else if (choice === 'Copy Resume Command' && copy !== undefined) {
    await copy();
  }
}

async function copyCommand(command: string): Promise<void> {
  await vscode.env.clipboard.writeText(command);
  void vscode.window.showInformationMessage('Pi Memory: resume command copied to the clipboard.');
}
