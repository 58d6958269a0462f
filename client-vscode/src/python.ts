// Finding the Python interpreter that runs the bundled server: the `pimem.python` setting, else the Python
// extension's active interpreter (when that extension is installed), else `python3`. In an untrusted workspace
// no interpreter inside the workspace is run (a committed `.venv/bin/python` would be code execution), and the
// version check runs isolated from the extension folder like the server itself (src/launch.ts).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { PythonExtension } from '@vscode/python-extension';
import { expandHome } from './config';
import { checkLaunch, configuredInterpreter, isInsideAny, type WorkspaceContext } from './launch';

export const MIN_PYTHON: readonly [number, number] = [3, 11];
const PYTHON_EXTENSION_ID = 'ms-python.python';
const DEFAULT_PYTHON = 'python3';

export interface Interpreter {
  command: string;
  /** Where the command came from, for messages. */
  origin: 'the pimem.python setting' | 'the Python extension' | 'the default';
  /** Set when the command must not be run at all (then it is not). */
  problem?: string;
}

export type InterpreterCheck = { ok: true; version: string } | { ok: false; problem: string };

export async function findInterpreter(
  configured: string,
  workspace: WorkspaceContext,
  log: vscode.LogOutputChannel,
): Promise<Interpreter> {
  if (configured.length > 0) {
    const expanded = expandHome(configured);
    const choice = configuredInterpreter(expanded, workspace);
    return choice.ok
      ? { command: choice.path, origin: 'the pimem.python setting' }
      : { command: expanded, origin: 'the pimem.python setting', problem: choice.problem };
  }
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined) {
    try {
      const api = await PythonExtension.api();
      const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
      const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
      const executable = env?.executable.uri?.fsPath;
      if (executable !== undefined && executable.length > 0) {
        if (!workspace.trusted && isInsideAny(executable, workspace.folders, (p) => fs.realpathSync.native(p))) {
          log.warn(
            `Not running the Python extension's interpreter ${executable}: it is inside this untrusted workspace. ` +
              `Using ${DEFAULT_PYTHON}; trust the workspace or set "pimem.python" in your user settings to choose another.`,
          );
        } else {
          return { command: executable, origin: 'the Python extension' };
        }
      }
    } catch (error) {
      log.warn(`Could not ask the Python extension for its interpreter: ${String(error)}`);
    }
  }
  return { command: DEFAULT_PYTHON, origin: 'the default' };
}

/** Runs the interpreter once (isolated, from `extensionPath`) to read its version; a problem when unusable. */
export function checkInterpreter(command: string, extensionPath: string): Promise<InterpreterCheck> {
  const launch = checkLaunch(extensionPath, command, 'import sys; print("%d.%d.%d" % sys.version_info[:3])');
  return new Promise((resolve) => {
    execFile(launch.command, launch.args, { cwd: launch.cwd, timeout: 20_000, windowsHide: true }, (error, stdout, stderr) => {
      if (error !== null) {
        const code = (error as NodeJS.ErrnoException).code;
        const detail = stderr.trim().split('\n').pop() ?? '';
        resolve({ ok: false, problem: code === 'ENOENT' ? 'was not found' : `could not be run (${detail || error.message.trim()})` });
        return;
      }
      const version = stdout.trim();
      const [major = 0, minor = 0] = version.split('.').map(Number);
      if (!(major > MIN_PYTHON[0] || (major === MIN_PYTHON[0] && minor >= MIN_PYTHON[1]))) {
        resolve({ ok: false, problem: `is Python ${version || '(unknown version)'}` });
        return;
      }
      resolve({ ok: true, version });
    });
  });
}

/** Calls `onChange` when the Python extension's active interpreter changes (no-op without that extension). */
export async function watchPythonExtension(onChange: () => void): Promise<vscode.Disposable | undefined> {
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) === undefined) {
    return undefined;
  }
  try {
    const api = await PythonExtension.api();
    return api.environments.onDidChangeActiveEnvironmentPath(() => onChange());
  } catch {
    return undefined;
  }
}
