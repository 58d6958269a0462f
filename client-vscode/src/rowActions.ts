// What a recall row's buttons do, in the results panel and in the sidebar search alike: open the conversation
// (rendered, `pimem.openConversation`, when that command exists; else the raw transcript), open the raw
// transcript, resume the session in a terminal, copy its resume command.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import type { RecallRow } from './protocol';
import { isDatabaseFile } from './rawTranscript';
import { findExecutable, planResume, programLabel, resumeAction, resumeLabel, type ChatStorage, type ResumeAction, type ResumeCommand } from './resumeArgs';

/** The rendered conversation (pimem/session), registered by src/conversation code when present. */
export const OPEN_CONVERSATION_COMMAND = 'pimem.openConversation';

export type ActionRow = Pick<RecallRow, 'turnId' | 'sessionId' | 'source' | 'cwd' | 'jsonlPath' | 'line' | 'resumeCommand'>;

export class RowActions {
  /** A copy confirms itself once with a notification, then in the status bar: one toast at most. */
  private copyToastShown = false;

  constructor(
    private readonly log: vscode.LogOutputChannel,
    private readonly chatStorage: ChatStorage = { workspace: undefined, global: undefined },
  ) {}

  private action(row: ActionRow): ResumeAction | undefined {
    return resumeAction(row, this.chatStorage);
  }

  /**
   * Rows whose resume button works: a terminal (the server gave a command and the ids have the agent's shape) or
   * VS Code's chat. A conversation only pimem can show (Cursor, another workspace's Copilot Chat) has "Open
   * conversation" instead.
   */
  canResume(row: ActionRow): boolean {
    const action = this.action(row);
    return action !== undefined && action.kind !== 'conversation';
  }

  /** The resume button's label for this row. */
  resumeLabel(row: ActionRow): string {
    return resumeLabel(this.action(row));
  }

  async openConversation(row: ActionRow): Promise<void> {
    const commands = await vscode.commands.getCommands(true);
    if (commands.includes(OPEN_CONVERSATION_COMMAND)) {
      await vscode.commands.executeCommand(OPEN_CONVERSATION_COMMAND, { sessionId: row.sessionId, turnId: row.turnId });
      return;
    }
    await this.openRaw(row);
  }

  /**
   * The transcript file beside the current editor, the cursor on the turn's user message. A database (OpenCode,
   * Cursor) is not text: its conversation is shown instead.
   */
  async openRaw(row: ActionRow): Promise<void> {
    if (isDatabaseFile(row.jsonlPath)) {
      const commands = await vscode.commands.getCommands(true);
      if (commands.includes(OPEN_CONVERSATION_COMMAND)) {
        vscode.window.setStatusBarMessage('Pi Memory: this session is stored in a database; showing its conversation', 5000);
        await vscode.commands.executeCommand(OPEN_CONVERSATION_COMMAND, { sessionId: row.sessionId, turnId: row.turnId });
      } else {
        void vscode.window.showWarningMessage('Pi Memory: this session is stored in a database, not a text transcript.');
      }
      return;
    }
    try {
      const document = await vscode.workspace.openTextDocument(vscode.Uri.file(row.jsonlPath));
      const line = row.line !== null && row.line >= 1 ? Math.min(row.line, document.lineCount) - 1 : 0;
      const range = new vscode.Range(line, 0, line, 0);
      await vscode.window.showTextDocument(document, { selection: range, preview: true, viewColumn: vscode.ViewColumn.Beside });
    } catch (error) {
      // The path and the error (which quotes it) come from the store: the log gets them, the notification not.
      this.log.warn(`Could not open ${row.jsonlPath}: ${error instanceof Error ? error.message : String(error)}`);
      void vscode.window
        .showErrorMessage('Could not open the transcript (see the Pi Memory log).', 'Show Log')
        .then((choice) => choice === 'Show Log' && this.log.show(true));
    }
  }

  /**
   * A terminal in the session's folder whose process is the agent itself, resuming the session (see
   * src/resumeArgs.ts for why no shell reads the command).
   */
  resumeInTerminal(row: ActionRow): void {
    const action = this.action(row);
    if (action === undefined) {
      void vscode.window.showWarningMessage('Pi Memory: this session cannot be resumed from here.');
      return;
    }
    if (action.kind === 'chat') {
      void this.openChatSession(row, action.uriPath);
    } else if (action.kind === 'conversation') {
      void this.openConversation(row); // no command line or editor command resumes it: pimem's view shows it
    } else {
      runResume(action.command, this.log, () => this.copyResume(row));
    }
  }

  /**
   * The Copilot Chat session in VS Code's own chat editor, restored by VS Code from this window's chat store (the
   * session URI is built from the validated id only); if VS Code cannot open it, pimem's conversation view.
   */
  private async openChatSession(row: ActionRow, uriPath: string): Promise<void> {
    const uri = vscode.Uri.from({ scheme: 'vscode-chat-session', authority: 'local', path: uriPath });
    try {
      await vscode.commands.executeCommand('vscode.open', uri);
    } catch (error) {
      this.log.warn(`Copilot Chat could not open the session: ${error instanceof Error ? error.message : String(error)}`);
      await this.openConversation(row);
    }
  }

  async copyResume(row: ActionRow): Promise<void> {
    if (row.resumeCommand === null) {
      return;
    }
    await vscode.env.clipboard.writeText(row.resumeCommand);
    // Not quoted: a resume command is built from stored data, and notifications render links.
    if (this.copyToastShown) {
      vscode.window.setStatusBarMessage('$(check) Resume command copied', 3000);
      return;
    }
    this.copyToastShown = true;
    void vscode.window.showInformationMessage('Pi Memory: resume command copied to the clipboard.');
  }
}

/**
 * Resumes a session in a new terminal whose process is the agent (`createTerminal {shellPath, shellArgs, cwd}`),
 * found on PATH outside the workspace folders; when it cannot, says why and offers `copy` (when given).
 */
export function runResume(command: ResumeCommand, log: vscode.LogOutputChannel, copy: (() => Promise<void>) | undefined): void {
  const label = programLabel(command.program);
  const folders = (vscode.workspace.workspaceFolders ?? []).filter((f) => f.uri.scheme === 'file').map((f) => f.uri.fsPath);
  const plan = planResume(command, findExecutable(command.program, process.env.PATH ?? '', folders), isDirectory);
  if (plan.kind === 'terminal') {
    log.info(`Resume in terminal: ${plan.options.shellPath} ${plan.options.shellArgs.join(' ')} (in ${plan.options.cwd ?? 'the default folder'})`);
    vscode.window.createTerminal(plan.options).show(false);
    return;
  }
  if (plan.kind === 'folderGone') {
    void vscode.window.showWarningMessage("Pi Memory: the session's folder no longer exists; Claude Code resumes a session only there.");
    return;
  }
  const why =
    plan.kind === 'notOnPath'
      ? `\`${command.program}\` (${label}) is not on PATH.`
      : `${label} is a batch file here and this session's arguments would not reach it intact.`;
  const offer = copy === undefined ? [] : ['Copy Resume Command'];
  void vscode.window.showWarningMessage(`Pi Memory: ${why}`, ...offer).then((choice) => {
    if (choice === 'Copy Resume Command' && copy !== undefined) {
      void copy();
    }
  });
}

function isDirectory(p: string): boolean {
  try {
    return fs.statSync(p).isDirectory();
  } catch {
    return false;
  }
}
