// Entry point of the Pi Memory extension: wires the server, the results panel, the hover, the status bar, the
// commands and the tools for the editor's agents together. The only module-level state is the instance
// deactivate() must stop.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { registerAgentTools } from './agents';
import { Commands, PimemCommands } from './commands';
import { RESTART_SETTINGS, SECTION } from './config';
import { registerHistoryViews } from './historyViews';
import { SelectionHoverProvider } from './hover';
import { LineHistory } from './lineHistory';
import { RecallRequest, TurnRequest } from './protocol';
import { watchPythonExtension } from './python';
import { RESULTS_VIEW_TYPE, ResultsPanel } from './resultsPanel';
import { RowActions } from './rowActions';
import { FOCUS_SEARCH_COMMAND, SearchView } from './searchView';
import { SessionsCommands } from './sessionsTree';
import { PimemServer } from './server';
import { SyncUi } from './syncUi';

let active: PimemServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Pi Memory', { log: true });
  const server = new PimemServer(context.extensionPath, log);
  // VS Code's chat store of this window: the parents of the extension's storage folders (src/resumeArgs.ts)
  const actions = new RowActions(log, {
    workspace: context.storageUri?.scheme === 'file' ? path.dirname(context.storageUri.fsPath) : undefined,
    global: context.globalStorageUri.scheme === 'file' ? path.dirname(context.globalStorageUri.fsPath) : undefined,
  });
  const panel = new ResultsPanel(context.extensionUri, log, async (turnId) => (await server.request(TurnRequest, { turnId })).turn, actions);
  const hover = new SelectionHoverProvider(server, Commands.showResults, log, FOCUS_SEARCH_COMMAND);
  const search = new SearchView(context.extensionUri, server, actions, hover, context.workspaceState, log);
  const commands = new PimemCommands(server, panel, hover, log);
  active = server;

  context.subscriptions.push(
    log,
    server,
    panel,
    new SyncUi(server, Commands.showStatus),
    ...commands.register(),
    search,
    ...search.register(),
    // the results panel comes back after a window reload, with its recall run again
    vscode.window.registerWebviewPanelSerializer(RESULTS_VIEW_TYPE, panel.serializer((request) => server.request(RecallRequest, request))),
    // the language-model tool is registered at activation, so that it answers outside a chat too
    ...registerAgentTools(server, context.extensionPath, log),
    // the Sessions and File History views, the file CodeLens, the rendered conversation (issue 15)
    ...registerHistoryViews(context, server, log),
    vscode.languages.registerHoverProvider([{ scheme: 'file' }, { scheme: 'untitled' }], hover),
    // which conversation wrote each line: the annotation, its hover and the command (issue 23)
    ...new LineHistory(server, log, SessionsCommands.openConversation).register(),
    vscode.workspace.onDidChangeConfiguration((e) => {
      if (RESTART_SETTINGS.some((key) => e.affectsConfiguration(key))) {
        server.scheduleRestart();
      }
    }),
    // the workspace's own pimem.python / pimem.dbPath apply from now on (src/config.ts: restricted)
    vscode.workspace.onDidGrantWorkspaceTrust(() => server.scheduleRestart('Workspace trusted')),
  );
  void watchPythonExtension(() => {
    if (vscode.workspace.getConfiguration(SECTION).get<string>('python', '').trim() === '') {
      server.scheduleRestart();
    }
  }).then((d) => d && context.subscriptions.push(d));

  void server.start();
}

export async function deactivate(): Promise<void> {
  const server = active;
  active = undefined;
  await server?.stop();
}
