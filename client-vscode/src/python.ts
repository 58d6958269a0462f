// Finding the Python interpreter that runs the bundled server: the `pimem.python` setting, else the Python
// extension's active interpreter (when that extension is installed), else `python3`.
import { execFile } from 'node:child_process';
import * as vscode from 'vscode';
import { PythonExtension } from '@vscode/python-extension';
import { expandHome } from './config';

export const MIN_PYTHON: readonly [number, number] = [3, 11];
const PYTHON_EXTENSION_ID = 'ms-python.python';

export interface Interpreter {
  command: string;
  /** Where the command came from, for messages. */
  origin: 'the pimem.python setting' | 'the Python extension' | 'the default';
}

export type InterpreterCheck = { ok: true; version: string } | { ok: false; problem: string };

export async function findInterpreter(configured: string, log: vscode.LogOutputChannel): Promise<Interpreter> {
  if (configured.length > 0) {
    return { command: expandHome(configured), origin: 'the pimem.python setting' };
  }
  if (vscode.extensions.getExtension(PYTHON_EXTENSION_ID) !== undefined) {
    try {
      const api = await PythonExtension.api();
      const resource = vscode.workspace.workspaceFolders?.[0]?.uri;
      const env = await api.environments.resolveEnvironment(api.environments.getActiveEnvironmentPath(resource));
      const executable = env?.executable.uri?.fsPath;
      if (executable !== undefined && executable.length > 0) {
        return { command: executable, origin: 'the Python extension' };
      }
    } catch (error) {
      log.warn(`Could not ask the Python extension for its interpreter: ${String(error)}`);
    }
  }
  return { command: 'python3', origin: 'the default' };
}

/** Runs the interpreter once to read its version; resolves to a problem description when it is unusable. */
export function checkInterpreter(command: string): Promise<InterpreterCheck> {
  const script = 'import sys; print("%d.%d.%d" % sys.version_info[:3])';
  return new Promise((resolve) => {
    execFile(command, ['-c', script], { timeout: 20_000, windowsHide: true }, (error, stdout) => {
      if (error !== null) {
        const code = (error as NodeJS.ErrnoException).code;
        resolve({ ok: false, problem: code === 'ENOENT' ? 'was not found' : `could not be run (${error.message.trim()})` });
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
