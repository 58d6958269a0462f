"""Driving the real Claude Code and Codex CLI against the mock model (tools/agentgen/mock_llm_server.py),
with pimem configured as their MCP server the way a user does it (`pimem mcp install ...`), in
scratch homes. The agents are installed by scripts/setup-agents.sh (pinned in tests/agents/)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
SETUP_SCRIPT = REPO / "scripts" / "setup-agents.sh"
MOCK = REPO / "tools" / "agentgen" / "mock_llm_server.py"
SETUP_TIMEOUT_S = 20 * 60
AGENT_TIMEOUT_S = 120

_lock = threading.Lock()
_installed: dict[str, Path] | None = None


class AgentSetupError(RuntimeError):
    """scripts/setup-agents.sh failed (no npm, no registry access, unsupported platform...)."""


def ensure_agents_installed() -> dict[str, Path]:
    """Run scripts/setup-agents.sh (fast when installed) once per process: {"claude": bin, "codex": bin}."""
    global _installed
    with _lock:
        if _installed is None:
            done = subprocess.run(["bash", str(SETUP_SCRIPT)], capture_output=True, text=True,
                                  timeout=SETUP_TIMEOUT_S, stdin=subprocess.DEVNULL)
            if done.returncode != 0:
                raise AgentSetupError(f"scripts/setup-agents.sh failed:\n{done.stdout}\n{done.stderr}")
            found = {}
            for line in done.stdout.splitlines():
                name, _, rest = line.strip().partition(":")
                if name in ("claude", "codex") and rest.strip():
                    found[name] = Path(rest.split(" (")[0].strip())
            if set(found) != {"claude", "codex"}:
                raise AgentSetupError(f"scripts/setup-agents.sh printed no binaries:\n{done.stdout}")
            _installed = found
        return _installed


def version(binary: Path) -> str:
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL).stdout.strip()


@dataclass
class MockModel:
    port: int
    log: Path

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text(encoding="utf-8").splitlines() if line.strip()]


@contextmanager
def mock_model(folder: Path) -> Iterator[MockModel]:
    """The scripted model on 127.0.0.1 (a free port), logging every request it gets."""
    folder.mkdir(parents=True, exist_ok=True)
    log, port_file = folder / "mock-requests.jsonl", folder / "mock.port"
    with open(folder / "mock.stderr", "wb") as stderr:
        process = subprocess.Popen([sys.executable, str(MOCK), "--port", "0", "--log", str(log),
                                    "--port-file", str(port_file)], stdout=stderr, stderr=stderr,
                                   stdin=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not (port_file.exists() and port_file.read_text().strip()):
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"the mock model did not start: {(folder / 'mock.stderr').read_text()}")
                time.sleep(0.05)
            yield MockModel(int(port_file.read_text()), log)
        finally:
            process.terminate()  # only the process started here, by its handle
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)


@dataclass
class Scratch:
    """A user's machine in a folder: HOME, the agents' config folders, a bin folder on PATH, a project."""

    root: Path
    port: int
    binaries: dict[str, Path]
    db: Path
    node_dir: Path | None = None    # a Node first on PATH (Pi's launcher needs Node >= 22.19)

    @property
    def home(self) -> Path:
        return self.root / "home"

    @property
    def project(self) -> Path:
        return self.root / "project"

    def env(self) -> dict[str, str]:
        node = shutil.which("node")
        nodes = [str(self.node_dir)] if self.node_dir else []
        nodes += [str(Path(node).parent)] if node else []
        path = [str(self.root / "bin"), *nodes, "/usr/local/bin", "/usr/bin", "/bin"]
        mock = f"http://127.0.0.1:{self.port}"
        env = {
            "PATH": os.pathsep.join(path), "HOME": str(self.home), "USER": os.environ.get("USER", "root"),
            "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "dumb", "TZ": "UTC",
            "CLAUDE_CONFIG_DIR": str(self.root / "claude-config"), "CODEX_HOME": str(self.root / "codex-home"),
            "MEMORY_DB_PATH": str(self.db),
            # Claude Code on the mock, quiet
            "ANTHROPIC_BASE_URL": mock, "ANTHROPIC_API_KEY": "sk-ant-api03-mock-dummy", "DISABLE_TELEMETRY": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_ERROR_REPORTING": "1",
            # Codex on the mock (see make_scratch)
            "MOCK_OPENAI_API_KEY": "sk-mock-dummy",
            # Pi on the mock (models.json, see make_scratch), offline
            "PI_CODING_AGENT_DIR": str(self.root / "pi-agent"), "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            # Anything that tries to leave the machine goes to the mock and is refused there.
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost",
        }
        for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"):
            env[name] = mock
        return env

    def run(self, argv: list[str], timeout: float = AGENT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=self.project, env=self.env(), capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)


def make_scratch(root: Path, port: int, binaries: dict[str, Path], db: Path, node_dir: Path | None = None) -> Scratch:
    scratch = Scratch(root, port, binaries, db, node_dir)
    for folder in (scratch.home, scratch.project, root / "bin", root / "claude-config", root / "codex-home",
                   root / "pi-agent"):
        folder.mkdir(parents=True, exist_ok=True)
    # What `npm install -g` would put on PATH.
    for name, binary in binaries.items():
        (root / "bin" / name).symlink_to(binary)
    # Codex's model provider: the mock, over the Responses API (as tools/agentgen does).
    (root / "codex-home" / "config.toml").write_text(f'''model = "gpt-5.5"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "Mock LLM"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "MOCK_OPENAI_API_KEY"
wire_api = "responses"
''', encoding="utf-8")
    # Pi's model provider: the mock, over Chat Completions (as tools/agentgen does).
    (root / "pi-agent" / "models.json").write_text(json.dumps({"providers": {"mock-openai": {
        "name": "Mock OpenAI-compatible", "baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions",
        "apiKey": "sk-mock-dummy", "models": [{"id": "mock-gpt", "name": "Mock GPT", "reasoning": False,
                                               "contextWindow": 128000, "maxTokens": 8192,
                                               "cost": {"input": 1, "output": 2, "cacheRead": 0.1,
                                                        "cacheWrite": 1}}]}}}, indent=2), encoding="utf-8")
    return scratch


# -- reading the mock's request log --------------------------------------------------------------------

@dataclass(frozen=True)
class ToolExchange:
    """One call of a tool by the (mock) model and the result the agent sent back for it."""

    name: str             # the name the agent exposed the tool under
    namespace: str | None
    arguments: Any
    result: str           # the tool result as the agent put it into the next model request


def anthropic_exchanges(requests: list[dict[str, Any]]) -> list[ToolExchange]:
    calls: dict[str, tuple[str, Any]] = {}
    results: dict[str, str] = {}
    for entry in requests:
        for message in (entry.get("body") or {}).get("messages") or []:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if block.get("type") == "tool_use":
                    calls[block["id"]] = (block["name"], block.get("input"))
                elif block.get("type") == "tool_result":
                    content = block.get("content")
                    if isinstance(content, list):
                        content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
                    results[block["tool_use_id"]] = content or ""
    return [ToolExchange(name, None, arguments, results[call_id])
            for call_id, (name, arguments) in calls.items() if call_id in results]


def chat_exchanges(requests: list[dict[str, Any]]) -> list[ToolExchange]:
    calls: dict[str, tuple[str, Any]] = {}
    results: dict[str, str] = {}
    for entry in requests:
        for message in (entry.get("body") or {}).get("messages") or []:
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                calls[call["id"]] = (function.get("name"), json.loads(function.get("arguments") or "{}"))
            if message.get("role") == "tool":
                content = message.get("content")
                if isinstance(content, list):
                    content = "\n".join(part.get("text", "") for part in content if isinstance(part, dict))
                results[message.get("tool_call_id")] = content or ""
    return [ToolExchange(name, None, arguments, results[call_id])
            for call_id, (name, arguments) in calls.items() if call_id in results]


def responses_exchanges(requests: list[dict[str, Any]]) -> list[ToolExchange]:
    calls: dict[str, tuple[str, str | None, Any]] = {}
    results: dict[str, str] = {}
    for entry in requests:
        for item in (entry.get("body") or {}).get("input") or []:
            if not isinstance(item, dict):
                continue
            if item.get("type") == "function_call":
                calls[item["call_id"]] = (item["name"], item.get("namespace"), json.loads(item["arguments"]))
            elif item.get("type") == "function_call_output":
                output = item.get("output")
                results[item["call_id"]] = output if isinstance(output, str) else json.dumps(output)
    return [ToolExchange(name, namespace, arguments, results[call_id])
            for call_id, (name, namespace, arguments) in calls.items() if call_id in results]
