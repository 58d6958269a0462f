"""Deterministic text material for the corpus generator: prose, code, paths, CJK, tool output,
the big bookkeeping blobs, and the planted entities of the recall query set.

Everything here is built once per process from the seed (``TextPool(seed)``); the generator then only
picks and joins pieces, which is what makes writing 20 GB fast. No piece of the pool contains a
planted entity or the no-match word (checked when the pool is built), so each planted entity's
frequency is exactly what the generator planted (see ``PLANTS``), except ``the`` and ``的``, which are
left to occur naturally (the "very common" queries).
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

escape = json.encoder.encode_basestring  # type: ignore[attr-defined]  # C: '"…"' with ensure_ascii=False


# ---------------------------------------------------------------------------------------------
# Planted entities (the recall query set is built on them, see bench/queries.py)
# ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plant:
    entity: str          # as searched (any case)
    rate: float          # share of the turns that get it (ignored when ``count`` is set)
    count: int = 0       # exact number of turns (rare entities)
    variants: tuple[str, ...] = ()   # spellings written into the text (default: the entity)
    cjk: bool = False


PLANTS: tuple[Plant, ...] = (
    Plant("zq_rare_ident_4417", 0.0, count=5),                        # rare identifier
    Plant("flamingo", 0.005, variants=("flamingo", "Flamingo", "FLAMINGO")),
    Plant("slugify_title", 0.01, variants=("slugify_title", "slugify_title()", "Slugify_Title")),
    Plant("payroll", 0.03, variants=("payroll", "Payroll", "payroll-api")),
    Plant("cache", 0.20, variants=("cache", "Cache", "cache_key", "CACHE")),   # very common planted word
    Plant("100%", 0.004),
    Plant("a_b", 0.004, variants=("a_b", "A_B", "a_b_c")),
    Plant("C:\\path\\file", 0.003, variants=("C:\\path\\file", "c:\\PATH\\File.txt", "C:\\path\\file\\x")),
    Plant("锁", 0.01, cjk=True, variants=("锁", "加锁", "锁住")),          # 1-character CJK
    Plant("缓存", 0.02, cjk=True, variants=("缓存", "缓存层", "清缓存")),    # 2-character CJK
)
NO_MATCH = "xylophonequartz"
# Characters and strings that must never appear in pool text (they would change the planted counts).
_FORBIDDEN = (*(p.entity.lower() for p in PLANTS), NO_MATCH, "缓")


# ---------------------------------------------------------------------------------------------
# Vocabulary
# ---------------------------------------------------------------------------------------------

WORDS = """
the of and to in is it that for on with as this was are be by at or from not but have an they which you one were all
we can there had been if more when will would who so no out up into do only then about than them some could time these
two may first any my now such like our over also new just because how most should after very where through back even
here work well still way between must both under never same another while last might great since against right three
long without state number part found place around before small every large again change point thing often together
next need used each line turn set show keep start run test build check read write file files code function value
values return error errors fix fixed bug bugs issue issues query queries table tables index indexes row rows column
columns request response server client config option options default update updated delete insert select join order
group limit offset count sum process thread worker queue task job event events message messages session sessions
history import export module package version release branch commit merge rebase diff patch review deploy service api
endpoint route handler middleware token auth login user users account schema migration database sqlite postgres redis
memory disk network socket timeout retry parse parser lexer buffer stream chunk batch page pages size bytes length
offset cursor async await promise callback future result results output input args param params flag flags string
strings list lists map maps dict array object class method field type types struct enum trait interface generic
template macro closure lambda iterator generator decorator pattern test tests unit integration mock fixture assert
expected actual failed passed skip slow fast log logs logging debug info warning trace metric metrics latency
throughput benchmark profile linux macos windows shell bash terminal editor plugin extension language compiler runtime
python rust typescript javascript golang java kotlin swift ruby haskell ocaml zig sql docker container image volume
cluster node pod deployment ingress secret variable environment tree graph edge vertex path walk search sort merge
heap stack hash set key keys lookup file system directory folder symlink permission owner group mode mask read-only
writable performance regression profile flame optimize allocate free leak growth peak usage limit document
documentation readme changelog license contributor maintainer upstream downstream window dialog button label input
form validation render component state props hook effect careful simple clean small quick slow heavy light strange
obvious subtle broken stable flaky
""".split()  # noqa: SIM905

CODE_NAMES = """
user_id session_id turn_index load_config parse_args read_lines write_row open_db close_db fetch_rows build_index
run_query make_key next_token split_words merge_sorted flush_buffer handle_request send_response retry_later
backoff_ms max_retries chunk_size page_size cursor_pos TurnRow SessionInfo IndexWriter QueryPlan RowCursor
ConfigLoader TokenStream HttpClient getUser setState useEffect fetchData parseJson toString fromIter into_iter
unwrap_or expect self this err ctx req res conn rows cols keys vals buf len cap idx pos acc tmp out
""".split()  # noqa: SIM905

PROJECTS = ("webshop", "salary-svc", "ml-pipeline", "infra", "pimem", "notes", "game-engine", "docs-site",
            "mobile-app", "data-lake", "auth-service", "cli-tools")
CWDS: tuple[str, ...] = (
    "/home/dev/src/webshop", "/home/dev/src/webshop/frontend", "/home/dev/src/salary-svc",
    "/home/dev/src/ml-pipeline", "/home/dev/work/infra", "/home/dev/src/pimem", "/home/dev/notes",
    "/home/dev/src/game-engine", "/home/dev/work/中文项目", "/srv/app/backend", "/home/dev/src/data-lake",
    "/home/dev/src/auth-service",
)

CJK_WORDS = """
我们 你们 这个 那个 问题 代码 函数 数据 数据库 索引 查询 服务器 客户端 配置 文件 目录 测试 错误 修复
版本 发布 分支 提交 合并 部署 日志 性能 内存 磁盘 网络 请求 响应 用户 会话 历史 记录 导入 导出 模块
接口 参数 结果 输出 输入 线程 进程 队列 任务 事件 消息 格式 编码 解码 字符串 列表 字典 数组 对象 类型
方法 字段 为什么 怎么 如何 可以 需要 应该 已经 还是 但是 因为 所以 如果 然后 现在 之前 之后 一下 一个
两个 很多 检查 运行 构建 编译 安装 更新 删除 插入 选择 排序 搜索 过滤 分页 超时 重试 失败 成功 稳定
正常 异常 项目 需求 设计 实现 方案 讨论 总结 说明 文档 例子 注意 重要 简单 复杂 快速 慢 大 小 新 旧
テスト コード 関数 データ ファイル エラー 修正 設定 実行 確認 問題 サーバー ログ 性能 メモリ
""".split()  # noqa: SIM905
CJK_PARTICLES = tuple("的了是在有和也就都把被吗呢吧をはがにで")
CJK_PUNCT = ("。", "，", "？", "！", "；")


def _clean_one(make: Callable[[], str]) -> str:
    """A piece without any forbidden string (retried until one comes out clean)."""
    for _ in range(1000):
        piece = make()
        lowered = piece.lower()
        if not any(bad in lowered for bad in _FORBIDDEN):
            return piece
    raise AssertionError("the text pool cannot avoid the planted entities")


class TextPool:
    """Pre-built pieces; all ``*_json`` members are already JSON string literals (quoted, escaped)."""

    def __init__(self, seed: int) -> None:
        rng = random.Random(f"{seed}:pool")
        self.sentences = [_clean_one(lambda: self._sentence(rng)) for _ in range(6000)]
        self.cjk = [_clean_one(lambda: self._cjk_sentence(rng)) for _ in range(1500)]
        self.code = [_clean_one(lambda: self._code_block(rng)) for _ in range(900)]
        self.paths = [_clean_one(lambda: self._path(rng)) for _ in range(600)]
        self.commands = [_clean_one(lambda: self._command(rng)) for _ in range(300)]
        # Tool output: raw (for the reply excerpts) and JSON-escaped (for records)
        self.outputs = [_clean_one(lambda: self._tool_output(rng)) for _ in range(400)]
        self.outputs_json = [escape(text) for text in self.outputs]
        self.thinking = [" ".join(rng.choice(self.sentences) for _ in range(rng.randint(1, 6))) for _ in range(300)]
        self.thinking_json = [escape(text) for text in self.thinking]
        # Big bookkeeping blobs (system prompts, skill listings, tool schemas, base instructions)
        self.blob_json = {name: escape(self._prose(rng, size)) for name, size in (
            ("skill_listing", 6200), ("skill_rendered", 6300), ("prompt_snapshot_a", 2000), ("prompt_snapshot_b", 2100),
            ("agent_listing", 3300), ("deferred_tools", 900), ("shape_system", 7000), ("shape_tool", 3200),
            ("environment", 9200), ("environment_short", 1100), ("base_instructions", 21400),
            ("developer_skills", 5600), ("host_skills", 4600),
            ("pi_system", 4800), ("attribution", 580), ("compaction", 600), ("codex_agents_md", 300),
        )}
        self.hex_json = ["".join(rng.choice("0123456789abcdef") for _ in range(64)) for _ in range(64)]
        self._check()

    # -- pieces ------------------------------------------------------------------------------------
    @staticmethod
    def _sentence(rng: random.Random) -> str:
        words = [rng.choice(WORDS) for _ in range(rng.randint(5, 18))]
        if rng.random() < 0.35:
            words.insert(rng.randrange(len(words)), f"`{rng.choice(CODE_NAMES)}`")
        if rng.random() < 0.1:
            words.insert(rng.randrange(len(words)), str(rng.randint(2, 9999)))
        text = " ".join(words)
        return text[0].upper() + text[1:] + rng.choice((".", ".", ".", "?", "!", ":"))

    @staticmethod
    def _cjk_sentence(rng: random.Random) -> str:
        parts = []
        for _ in range(rng.randint(4, 14)):
            parts.append(rng.choice(CJK_WORDS))
            if rng.random() < 0.45:
                parts.append(rng.choice(CJK_PARTICLES))
            if rng.random() < 0.08:
                parts.append(f" `{rng.choice(CODE_NAMES)}` ")
        return "".join(parts) + rng.choice(CJK_PUNCT)

    @staticmethod
    def _ident(rng: random.Random) -> str:
        style = rng.random()
        a, b = rng.choice(WORDS).replace("-", ""), rng.choice(WORDS).replace("-", "")
        if style < 0.4:
            return f"{a}_{b}"
        if style < 0.7:
            return a + b[:1].upper() + b[1:]
        if style < 0.85:
            return rng.choice(CODE_NAMES)
        return f"{a}{rng.randint(0, 99)}"

    def _code_block(self, rng: random.Random) -> str:
        kind = rng.choice(("python", "typescript", "rust", "sql", "bash", "go"))
        lines = []
        for _ in range(rng.randint(3, 22)):
            x, y, z = self._ident(rng), self._ident(rng), self._ident(rng)
            lines.append(rng.choice({
                "python": (f"def {x}({y}, {z}=None):", f"    return {y}.{z}({x})", f"    {x} = {y}[{z}]",
                           f"    if not {x}:\n        raise ValueError('{y}')", f"for {x} in {y}:",
                           f"    {x}.append({z})  # {rng.choice(WORDS)}"),
                "typescript": (f"export function {x}({y}: string): number {{", f"  const {x} = await {y}({z});",
                               f"  return {x}.map(({y}) => {y}.{z});", "}", f"interface {x.title()} {{ {y}: {z}[] }}"),
                "rust": (f"fn {x}({y}: &str) -> Result<{z.title()}, Error> {{",
                         f"    let {x} = {y}.iter().map(|v| v.{z}());",
                         f"    {x}.collect::<Vec<_>>()", "}", f"impl {x.title()} for {y.title()} {{}}"),
                "sql": (f"SELECT {x}, {y} FROM {z} WHERE {x} = ?;", f"CREATE INDEX idx_{x} ON {y}({z});",
                        f"UPDATE {x} SET {y} = {y} + 1 WHERE {z} IS NULL;"),
                "bash": (f"cd ~/src/{rng.choice(PROJECTS)} && make {x}", f"grep -rn '{y}' src/ | head",
                         f"export {x.upper()}={z}", f"python -m {x} --{y} {rng.randint(1, 500)}"),
                "go": (f"func {x}({y} string) ({z}, error) {{", f"\t{x}, err := {y}.{z}()",
                       "\tif err != nil {\n\t\treturn nil, err\n\t}", "}"),
            }[kind]))
        return f"```{kind}\n" + "\n".join(lines) + "\n```"

    @staticmethod
    def _path(rng: random.Random) -> str:
        root = rng.choice(("/home/dev/src", "/home/dev/work", "/srv/app", "~/src", "./src", "/var/log", "/etc"))
        parts = [rng.choice(PROJECTS)] + [rng.choice(WORDS).replace("-", "_") for _ in range(rng.randint(1, 4))]
        ext = rng.choice(("py", "ts", "rs", "go", "md", "toml", "json", "sql", "log", "yaml", "tsx"))
        return f"{root}/{'/'.join(parts)}.{ext}"

    def _command(self, rng: random.Random) -> str:
        return rng.choice((
            f"cat {self._path(rng)}", f"ls -la {self._path(rng).rsplit('/', 1)[0]}", "make test", "git status",
            f"pytest -q tests/test_{rng.choice(WORDS).replace('-', '_')}.py", f"rg -n {self._ident(rng)} src",
            f"python3 -m {self._ident(rng)}", "npm run build", "cargo test", f"sed -n 1,80p {self._path(rng)}",
            f"git diff HEAD~{rng.randint(1, 9)}", "docker compose ps", "go test ./...",
        ))

    def _tool_output(self, rng: random.Random) -> str:
        size = min(24000, int(rng.lognormvariate(6.2, 1.1)))   # median ~500 B, long tail
        pieces: list[str] = []
        total = 0
        while total < size:
            kind = rng.random()
            if kind < 0.35:
                piece = rng.choice(self.code)
            elif kind < 0.6:
                piece = "\n".join(f"-rw-r--r-- 1 dev dev {rng.randint(10, 99999):>6} Nov {rng.randint(1, 30):>2} "
                                  f"{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d} {self._path(rng)}"
                                  for _ in range(rng.randint(2, 12)))
            elif kind < 0.8:
                piece = "\n".join(f"{rng.choice(('INFO', 'DEBUG', 'WARN', 'ERROR'))} {rng.choice(self.sentences)}"
                                  for _ in range(rng.randint(2, 10)))
            else:
                piece = (f"============ {rng.randint(1, 300)} passed, {rng.randint(0, 3)} failed in "
                         f"{rng.random() * 20:.2f}s ============\n" + rng.choice(self.sentences))
            pieces.append(piece)
            total += len(piece) + 1
        return "\n".join(pieces)[:max(size, 1)]

    def _prose(self, rng: random.Random, size: int) -> str:
        pieces: list[str] = []
        total = 0
        while total < size:
            piece = rng.choice(self.sentences) if rng.random() < 0.8 else "\n\n# " + rng.choice(WORDS).title() + "\n"
            pieces.append(piece)
            total += len(piece) + 1
        return " ".join(pieces)[:size]

    def _check(self) -> None:
        for collection in (self.sentences, self.cjk, self.code, self.paths, self.commands, self.outputs,
                           self.thinking):
            for text in collection:
                lowered = text.lower()
                for bad in _FORBIDDEN:
                    if bad in lowered:
                        raise AssertionError(f"pool text contains the planted entity {bad!r}: {text[:80]!r}")

    # -- turn text -----------------------------------------------------------------------------------
    def text(self, rng: random.Random, low: int, high: int, cjk_share: float) -> str:
        """English prose with code and paths, or CJK sentences; ``low``..``high`` characters, skewed short."""
        target = max(low, min(high, int(rng.lognormvariate(0, 0.9) * (low + high) / 4)))
        cjk = rng.random() < cjk_share
        pieces: list[str] = []
        total = 0
        while total < target:
            roll = rng.random()
            if cjk:
                piece = rng.choice(self.cjk) if roll < 0.85 else rng.choice(self.sentences)
            elif roll < 0.72:
                piece = rng.choice(self.sentences)
            elif roll < 0.86 and target - total > 160:
                piece = "\n\n" + rng.choice(self.code) + "\n\n"
            elif roll < 0.95:
                piece = f"See `{rng.choice(self.paths)}`."
            else:
                piece = f"I ran `{rng.choice(self.commands)}`."
            if pieces and total + len(piece) > high:
                break
            pieces.append(piece)
            total += len(piece) + 1
        text = "".join(p if cjk else p + " " for p in pieces).strip()
        return text[:high].strip() or "ok"

    @staticmethod
    def plant(rng: random.Random, text: str, spelling: str, cjk: bool) -> str:
        if cjk:
            sentence = rng.choice(("这个{e}的问题还在。", "关于{e}，我们之前讨论过。", "{e}怎么处理？",
                                   "请检查{e}。"))
        else:
            sentence = rng.choice(("What about {e}?", "Check {e} again.", "The `{e}` part is still wrong.",
                                   "(see {e})", "We changed {e} yesterday.", "Is {e} related?"))
        sentence = sentence.replace("{e}", spelling)
        return sentence + " " + text if rng.random() < 0.5 else text + " " + sentence
