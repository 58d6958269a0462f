// Entry point of the Pi Memory extension: wires the server, the results panel, the hover, the status bar, the
// commands and the tools for the editor's agents together. The only module-level state is the instance
// deactivate() must stop.
import * as vscode from 'vscode';
import { registerAgentTools } from './agents';
import { Commands, PimemCommands } from './commands';
import { RESTART_SETTINGS, SECTION } from './config';
import { SelectionHoverProvider } from './hover';
import { TurnRequest } from './protocol';
import { watchPythonExtension } from './python';
import { ResultsPanel } from './resultsPanel';
import { PimemServer } from './server';
import { SyncUi } from './syncUi';

let active: PimemServer | undefined;

export function activate(context: vscode.ExtensionContext): void {
  const log = vscode.window.createOutputChannel('Pi Memory', { log: true });
  const server = new PimemServer(context.extensionPath, log);
  const panel = new ResultsPanel(context.extensionUri, log, async (turnId) => (await server.request(TurnRequest, { turnId })).turn);
  const hover = new SelectionHoverProvider(server, Commands.showResults, log);
  const commands = new PimemCommands(server, panel, hover, log);
  active = server;

  context.subscriptions.push(
    log,
    server,
    panel,
    new SyncUi(server, Commands.showStatus),
    ...commands.register(),
    // the language-model tool is registered at activation, so that it answers outside a chat too
    ...registerAgentTools(server, context.extensionPath, log),
    vscode.languages.registerHoverProvider([{ scheme: 'file' }, { scheme: 'untitled' }], hover),
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
