// Offering `pimem mcp` to the editor's agents (src/agents.ts): which `pimem` on PATH may serve them, and the
// command that starts it. Pure (no `vscode` import), so that test/unit checks it. The rules of src/launch.ts
// hold here too: nothing inside a workspace folder is run (a PATH entry there, a relative PATH entry, a
// `pimem` or an interpreter that resolves into a folder are skipped), and the interpreter runs isolated (`-I`,
// src/serverLaunch.json's flags) from the extension folder, for the MCP SDK check as for the server itself.
import * as fs from 'node:fs';
import * as path from 'node:path';
import { isInsideAny, type ProcessLaunch } from './launch';
import spec from './serverLaunch.json';

/** package.json contributes.mcpServerDefinitionProviders[0].id */
export const MCP_PROVIDER_ID = 'pimem';

/** What findPimem may ask of the file system. */
export interface FileSystemProbe {
  isExecutableFile(file: string): boolean;
  realpath(file: string): string;
  /** The first bytes of a file as text (its `#!` line and the next), undefined when unreadable. */
  readHead(file: string): string | undefined;
}

export const nodeFileSystem: FileSystemProbe = {
  isExecutableFile(file) {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  },
  realpath: (file) => fs.realpathSync.native(file),
  readHead(file) {
    try {
      const fd = fs.openSync(file, 'r');
      try {
        const buffer = Buffer.alloc(1024);
        return buffer.subarray(0, fs.readSync(fd, buffer, 0, buffer.length, 0)).toString('utf8');
      } finally {
        fs.closeSync(fd);
      }
    } catch {
      return undefined;
    }
  },
};

export type PimemOnPath =
  | { ok: true; executable: string; python: string; skipped: string[] }
  | { ok: false; reason: string; skipped: string[] };

const PYTHON_NAME = /^python(\d+(\.\d+)?)?$/;

/**
 * The interpreter a `pimem` console script runs: pip writes `#!/abs/python`, or for a path with spaces or over
 * the kernel's limit `#!/bin/sh` and `'''exec' "/abs/python" "$0" "$@"`. Undefined for anything else
 * (`#!/usr/bin/env python3` included: which interpreter that is depends on PATH at the time it runs).
 */
export function scriptInterpreter(head: string): string | undefined {
  const [first = '', second = ''] = head.split('\n', 2).map((line) => line.replace(/\r$/, ''));
  let python: string | undefined;
  const direct = /^#!\s*(\/\S+)\s*$/.exec(first);
  if (direct?.[1] !== undefined && direct[1] !== '/bin/sh') {
    python = direct[1];
  } else if (first === '#!/bin/sh') {
    const exec = /^'''exec' (?:"([^"]+)"|(\S+)) "\$0" "\$@"$/.exec(second);
    python = exec?.[1] ?? exec?.[2];
  }
  return python !== undefined && path.isAbsolute(python) && PYTHON_NAME.test(path.basename(python)) ? python : undefined;
}

/**
 * The first `pimem` on `pathEnv` that may be run for the editor's agents, with its interpreter. Entries that
 * are relative (they name whatever the current directory is) or inside a workspace folder are passed over, as
 * is a `pimem` (or its interpreter) that resolves into one; `skipped` says which were, for the log.
 */
export function findPimem(
  pathEnv: string,
  folders: readonly string[],
  files: FileSystemProbe = nodeFileSystem,
  platform: string = process.platform,
): PimemOnPath {
  if (platform === 'win32') {
    return { ok: false, reason: 'offering pimem mcp is not supported on Windows yet', skipped: [] };
  }
  const skipped: string[] = [];
  const inside = (file: string): boolean => isInsideAny(file, folders, (p) => files.realpath(p));
  for (const dir of pathEnv.split(path.delimiter)) {
    if (dir.length === 0 || !path.isAbsolute(dir)) {
      continue;
    }
    const executable = path.join(dir, 'pimem');
    if (!files.isExecutableFile(executable)) {
      continue;
    }
    if (inside(executable)) {
      skipped.push(`${executable} (inside the workspace)`);
      continue;
    }
    const head = files.readHead(executable);
    const python = head === undefined ? undefined : scriptInterpreter(head);
    if (python === undefined) {
      skipped.push(`${executable} (not a Python console script)`);
      continue;
    }
    if (inside(python)) {
      skipped.push(`${executable} (its interpreter ${python} is inside the workspace)`);
      continue;
    }
    return { ok: true, executable, python, skipped };
  }
  return { ok: false, reason: 'no pimem on PATH', skipped };
}

/**
 * Run as `<python> -I -u -c MCP_PROBE` (src/launch.ts checkLaunch): exits 0 and prints pimem's version when that
 * interpreter has pimem and the MCP SDK (the VS Code extension's bundled server has no SDK), else exits 3.
 * It imports pimem's own package (to find pimem.mcp.server), nothing of the SDK.
 */
export const MCP_PROBE =
  'import importlib.util as u, sys\n' +
  'ok = all(u.find_spec(m) is not None for m in ("mcp", "pimem", "pimem.mcp.server"))\n' +
  'if ok:\n' +
  '    import pimem\n' +
  '    print(pimem.__version__)\n' +
  'sys.exit(0 if ok else 3)\n';

export interface McpOptions {
  /** The store (as the editor's server gets it); undefined: pimem's default ($MEMORY_DB_PATH, ~/.pi/agent/memory.db). */
  dbPath: string | undefined;
  redact: boolean;
}

/** `<python> -I -u -m pimem mcp [--db PATH] [--no-redact]`, from the extension folder. */
export function mcpServerLaunch(extensionPath: string, python: string, options: McpOptions): ProcessLaunch {
  const args = [...spec.flags, '-m', 'pimem', 'mcp'];
  if (options.dbPath !== undefined) {
    args.push('--db', options.dbPath);
  }
  if (!options.redact) {
    args.push('--no-redact');
  }
  return { command: python, args, cwd: extensionPath };
}
