// The platform-specific packages (dist/pimem-<target>.vsix, from `npm run package:all`): each one is labelled
// with its target and holds the platform wheels of that target only, for every bundled CPython version, with
// machine code for that OS and CPU; and this machine's package, unpacked, starts its server with the bundled
// wheels of the running interpreter (the only target that can run here).
import assert from 'node:assert/strict';
import { Buffer } from 'node:buffer';
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { PYTHON_VERSIONS, TARGETS, hostTarget } from '../../scripts/bundle-server.mjs';
import { vsixPath } from '../../scripts/package.mjs';
import { Zip } from './zip.mjs';

const client = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const repo = join(client, '..');
const PLATFORM = 'extension/bundled/platform/';
const LIBS = 'extension/bundled/libs/';
const COMPILED = /\.(so|pyd|dylib|dll)$/;

const normalize = (name) => name.toLowerCase().replace(/[-_.]+/g, '_');
const platformPins = readFileSync(join(client, 'requirements-platform.txt'), 'utf8').split('\n')
  .filter((l) => /^[a-z]/i.test(l)).map((l) => l.trim().split('=='));

/** What a wheel's platform tag must look like in each target's package. */
const PLATFORM_TAG = {
  'linux-x64': /^(manylinux\d*_(\d+_\d+_)?x86_64|linux_x86_64)$/,
  'linux-arm64': /^(manylinux\d*_(\d+_\d+_)?aarch64|linux_aarch64)$/,
  'darwin-x64': /^macosx_\d+_\d+_(x86_64|intel|universal2)$/,
  'darwin-arm64': /^macosx_\d+_\d+_(arm64|universal2)$/,
  'win32-x64': /^win_amd64$/,
};
/** The binary format and CPU that each target's machine code must have. */
const MACHINE = {
  'linux-x64': ['elf', 'x64'], 'linux-arm64': ['elf', 'arm64'],
  'darwin-x64': ['macho', 'x64'], 'darwin-arm64': ['macho', 'arm64'], 'win32-x64': ['pe', 'x64'],
};

/** The format of a compiled file and the CPUs it holds code for (from its header). */
function machineOf(bytes) {
  if (bytes.readUInt32BE(0) === 0x7f454c46) {   // ELF; e_machine, little-endian on both targets
    return { format: 'elf', cpus: [{ 0x3e: 'x64', 0xb7: 'arm64' }[bytes.readUInt16LE(18)] ?? 'other'] };
  }
  const macho = { 0x01000007: 'x64', 0x0100000c: 'arm64' };
  if (bytes.readUInt32LE(0) === 0xfeedfacf) {
    return { format: 'macho', cpus: [macho[bytes.readUInt32LE(4)] ?? 'other'] };
  }
  if (bytes.readUInt32BE(0) === 0xcafebabe) {   // universal ("fat") Mach-O: big-endian list of architectures
    const count = bytes.readUInt32BE(4);
    return { format: 'macho', cpus: Array.from({ length: count }, (_, i) => macho[bytes.readUInt32BE(8 + 20 * i)] ?? 'other') };
  }
  if (bytes.toString('latin1', 0, 2) === 'MZ') {
    const pe = bytes.readUInt32LE(0x3c);
    return { format: 'pe', cpus: [{ 0x8664: 'x64', 0xaa64: 'arm64' }[bytes.readUInt16LE(pe + 4)] ?? 'other'] };
  }
  return { format: 'unknown', cpus: [] };
}

describe('each target package holds the wheels of its own platform', () => {
  for (const target of Object.keys(TARGETS)) {
    test(target, () => {
      const path = vsixPath(target);
      assert.ok(existsSync(path), `${path} is missing: run \`npm run package:all\``);
      const zip = new Zip(path);
      const names = zip.names();
      const manifest = zip.read('extension.vsixmanifest').toString('utf8');
      assert.match(manifest, new RegExp(`<Identity [^>]*TargetPlatform="${target}"`), 'the package is labelled with its target');
      const platforms = new Set(names.filter((n) => n.startsWith(PLATFORM)).map((n) => n.slice(PLATFORM.length).split('/')[0]));
      assert.deepEqual([...platforms], [target], 'wheels of this target only');
      // the pure part is the same everywhere and holds no machine code
      assert.ok(names.includes(`${LIBS}pimem/__init__.py`) && names.includes(`${LIBS}pygls/__init__.py`));
      assert.deepEqual(names.filter((n) => n.startsWith(LIBS) && COMPILED.test(n)), []);
      for (const version of PYTHON_VERSIONS) {
        const tag = `cp${version.replace('.', '')}`;
        const folder = `${PLATFORM}${target}/${tag}/`;
        for (const [name, pinned] of platformPins) {
          const wheel = `${folder}${normalize(name)}-${pinned}.dist-info/WHEEL`;
          assert.ok(names.includes(wheel), `${wheel} is in the package`);
          // a wheel fits when one of its tags does (orjson's macOS wheel is x86_64, arm64 and universal2 at once)
          const tags = [...zip.read(wheel).toString('utf8').matchAll(/^Tag: (\S+)-(\S+)-(\S+)$/gm)].map((m) => m.slice(1));
          const fitting = tags.filter(([python, abi, plat]) =>
            [tag, 'py3'].includes(python) && [tag, 'abi3', 'none'].includes(abi) && PLATFORM_TAG[target].test(plat));
          assert.ok(fitting.length > 0, `${wheel}: one of its tags ${tags.map((t) => t.join('-'))} fits CPython ${version} on ${target}`);
        }
        const compiled = names.filter((n) => n.startsWith(folder) && COMPILED.test(n));
        assert.ok(compiled.length >= 2, `${folder} has the orjson and zstandard extension modules`);
        for (const file of compiled) {
          const module = file.split('/').pop();
          // the interpreter only loads an extension module whose name carries its ABI
          assert.ok(module.includes(`cpython-${tag.slice(2)}`) || module.includes(`.${tag}-`) || module.includes('.abi3.'), `${file} is built for ${tag}`);
          const [format, cpu] = MACHINE[target];
          const machine = machineOf(zip.read(file));
          assert.equal(machine.format, format, `${file} is ${format} code`);
          assert.ok(machine.cpus.includes(cpu), `${file} has ${cpu} code (${machine.cpus})`);
        }
        assert.deepEqual(names.filter((n) => n.startsWith(`${folder}zstandard/_cffi.`)), [], 'the unused cffi backend is left out');
      }
      assert.deepEqual(names.filter((n) => n.includes('/bin/') || n.endsWith('.pyc')), []);
      // what the listing and the walkthrough show ships in every package
      const manifestJson = JSON.parse(zip.read('extension/package.json').toString('utf8'));
      const media = manifestJson.contributes.walkthroughs.flatMap((w) => w.steps.map((s) => s.media.markdown ?? s.media.image));
      for (const file of [manifestJson.icon, ...media, 'CHANGELOG.md', 'readme.md']) {
        assert.ok(names.some((n) => n.toLowerCase() === `extension/${file}`.toLowerCase()), `${file} is in the package`);
      }
    });
  }
});

// ---- this machine's package, unpacked, runs -------------------------------------------------------------

const scratch = mkdtempSync(join(tmpdir(), 'pimem-package-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

function unpack(target, into) {
  const zip = new Zip(vsixPath(target));
  for (const name of zip.names().filter((n) => n.startsWith('extension/') && !n.endsWith('/'))) {
    const file = join(into, name.slice('extension/'.length));
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, zip.read(name));
  }
  return into;
}

/** The interpreters to run the package with: python3, each python3.N on PATH, and PIMEM_TEST_PYTHONS
 *  (colon-separated paths), by their real executable, one per version. */
function interpreters() {
  const candidates = ['python3', ...PYTHON_VERSIONS.map((v) => `python${v}`), ...(process.env.PIMEM_TEST_PYTHONS ?? '').split(':').filter(Boolean)];
  const found = new Map();
  for (const candidate of candidates) {
    try {
      const [version, executable] = execFileSync(candidate, ['-I', '-c', 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}"); print(sys.executable)'],
        { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim().split('\n');
      if (!found.has(version)) {
        found.set(version, executable);
      }
    } catch {
      // not on this machine
    }
  }
  return [...found];
}

// What the launcher puts on sys.path, then where each module comes from (the launcher's own function).
const PROBE = `
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("pimem_vscode_launch", sys.argv[1])
launcher = importlib.util.module_from_spec(spec)
spec.loader.exec_module(launcher)
bundled = sys.argv[2]
sys.path[:] = launcher.server_sys_path(sys.path, bundled + "/libs", launcher.platform_libs(bundled))
import pimem.cli, pygls.server, watchdog.observers, orjson, zstandard
names = ("pimem", "pygls", "watchdog", "orjson", "zstandard")
print(json.dumps({"target": launcher.running_target(), "files": {n: sys.modules[n].__file__ for n in names}}))
if len(sys.argv) > 3:   # also compress a file with the bundled zstandard, for the server test
    data = open(sys.argv[3], "rb").read()
    open(sys.argv[3] + ".zst", "wb").write(zstandard.ZstdCompressor().compress(data))
`;

/** A minimal LSP client over the server's stdio. */
function lspSession(child) {
  let buffer = Buffer.alloc(0);
  let nextId = 0;
  const waiting = new Map();
  const notifications = [];
  const listeners = [];
  child.stdout.on('data', (chunk) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const headerEnd = buffer.indexOf('\r\n\r\n');
      if (headerEnd < 0) return;
      const length = Number(/Content-Length: (\d+)/i.exec(buffer.toString('ascii', 0, headerEnd))[1]);
      if (buffer.length < headerEnd + 4 + length) return;
      const message = JSON.parse(buffer.toString('utf8', headerEnd + 4, headerEnd + 4 + length));
      buffer = buffer.subarray(headerEnd + 4 + length);
      if (message.method !== undefined && message.id !== undefined) {
        send({ id: message.id, result: null });   // work-done progress and the like
      } else if (message.method !== undefined) {
        notifications.push(message);
        listeners.splice(0).forEach((listener) => listener());
      } else {
        waiting.get(message.id)?.(message);
      }
    }
  });
  function send(message) {
    const body = Buffer.from(JSON.stringify({ jsonrpc: '2.0', ...message }));
    child.stdin.write(`Content-Length: ${body.length}\r\n\r\n`);
    child.stdin.write(body);
  }
  return {
    send,
    request(method, params) {
      const id = ++nextId;
      return new Promise((resolve, reject) => {
        waiting.set(id, (m) => (m.error ? reject(new Error(`${method}: ${JSON.stringify(m.error)}`)) : resolve(m.result)));
        send({ id, method, params });
      });
    },
    async notification(method, timeoutMs, matches = () => true) {
      const deadline = Date.now() + timeoutMs;
      while (!notifications.some((n) => n.method === method && matches(n.params))) {
        assert.ok(Date.now() < deadline, `no such ${method} within ${timeoutMs} ms`);
        await new Promise((resolve) => { listeners.push(resolve); setTimeout(resolve, 200); });
      }
    },
  };
}

/** Runs the unpacked extension's server as the extension does (serverLaunch.json) over a history that holds
 *  only one archived Codex session compressed as .jsonl.zst, with no zstd command on PATH: returns the status
 *  and a recall of that session's words after the initial sync. */
async function serveArchivedCodexSession(python, extension, home) {
  const spec = JSON.parse(readFileSync(join(client, 'src', 'serverLaunch.json'), 'utf8'));
  const emptyPath = join(home, 'no-commands');
  mkdirSync(emptyPath, { recursive: true });
  const env = {
    HOME: home, PATH: emptyPath, CLAUDE_CONFIG_DIR: join(home, 'claude'), CODEX_HOME: join(home, 'codex'),
    PI_CODING_AGENT_DIR: join(home, 'pi', 'agent'), MEMORY_DB_PATH: join(home, 'memory.db'),
  };
  const child = spawn(python, [...spec.flags, join(extension, spec.script), ...spec.args], { cwd: extension, env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  try {
    const session = lspSession(child);
    const init = await session.request('initialize', {
      processId: null, rootUri: null, capabilities: { window: { workDoneProgress: true } },
      initializationOptions: { dbPath: env.MEMORY_DB_PATH, autoSync: true }, workspaceFolders: null,
    });
    assert.ok(init.capabilities, 'the server answers initialize');
    session.send({ method: 'initialized', params: {} });
    await session.notification('pimem/syncStatus', 90_000, (params) => !params.syncing);   // the initial sync ended
    const status = await session.request('pimem/status', {});
    const recall = await session.request('pimem/recall', { entities: ['payroll'], limit: 5 });
    await session.request('shutdown', null);
    session.send({ method: 'exit' });
    assert.equal(await exited, 0, stderr);
    assert.ok(!stderr.includes('Traceback'), stderr);
    return { status, recall, stderr };
  } finally {
    child.kill();
  }
}

describe(`this machine's package (${hostTarget()}) runs its server`, () => {
  const target = hostTarget();
  const found = interpreters();
  const extension = existsSync(vsixPath(target)) ? unpack(target, join(scratch, 'extension')) : undefined;
  const archived = readdirSync(join(repo, 'samples', 'history', 'codex', 'archived_sessions')).find((n) => n.endsWith('.jsonl'));

  test('there is a Python to run it with', () => {
    assert.ok(extension !== undefined, `${vsixPath(target)} is missing: run \`npm run package:all\``);
    assert.ok(found.length > 0, 'no python3 on PATH');
  });

  for (const [version, python] of found) {
    test(`with CPython ${version}: the launcher picks the bundled wheels of ${target}/cp${version.replace('.', '')}, and a .jsonl.zst is read`, async () => {
      const bundled = join(extension, 'bundled');
      const home = join(scratch, `home-${version}`);
      const rollouts = join(home, 'codex', 'archived_sessions');
      mkdirSync(rollouts, { recursive: true });
      cpSync(join(repo, 'samples', 'history', 'codex', 'archived_sessions', archived), join(rollouts, archived));
      const probe = JSON.parse(execFileSync(python, ['-I', '-c', PROBE, join(extension, 'launcher', 'launch.py'), bundled, join(rollouts, archived)],
        { cwd: extension, encoding: 'utf8' }));
      rmSync(join(rollouts, archived));   // only the compressed copy is left
      assert.equal(probe.target, target);
      const platformFolder = join(bundled, 'platform', target, `cp${version.replace('.', '')}`);
      assert.ok(probe.files.pimem.startsWith(join(bundled, 'libs')), probe.files.pimem);
      assert.ok(probe.files.pygls.startsWith(join(bundled, 'libs')), probe.files.pygls);
      for (const name of ['watchdog', 'orjson', 'zstandard']) {
        assert.ok(probe.files[name].startsWith(platformFolder), `${name} from ${probe.files[name]}`);
      }

      const { status, recall } = await serveArchivedCodexSession(python, extension, home);
      assert.equal(status.totalTurns, 1, JSON.stringify(status));
      assert.equal(status.lastSync.issues, 0, JSON.stringify(status));
      assert.deepEqual(recall.results.map((row) => row.source), ['codex'], JSON.stringify(recall));
    });
  }

  test('without the platform wheels the same .jsonl.zst is not read (so the test above proves the bundled zstandard)', async () => {
    const [version, python] = found[0];
    const bare = join(scratch, 'bare-extension');
    cpSync(extension, bare, { recursive: true });
    rmSync(join(bare, 'bundled', 'platform'), { recursive: true });
    const home = join(scratch, 'home-bare');
    cpSync(join(scratch, `home-${version}`, 'codex'), join(home, 'codex'), { recursive: true });
    const { status } = await serveArchivedCodexSession(python, bare, home);
    assert.equal(status.totalTurns, 0, JSON.stringify(status));
    assert.equal(status.lastSync.issues, 1, 'the unreadable .jsonl.zst is an issue of the sync, not a failure');
  });
});
