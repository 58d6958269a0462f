# ruff: noqa: E501  (transcript text: long natural-language lines, kept as written)
"""The planted conversations of the quality benchmark and the queries labelled with them.

Each conversation is a concrete problem solved with an agent, written the way such sessions read
(the user's report, often with a pasted error or a line of code; the agent's diagnosis and fix). The
queries are written the way a user asks months later: paraphrased, not copied; a question shares
ordinary words ("test", "fix", "cache", "timeout") with thousands of generated distractor turns and
with the near-miss conversations below (the same topic, another problem). Four kinds:

* ``entities``: what an agent extracts from its own context and sends as ``entities``;
* ``question``: a question typed in plain language (English, Chinese, Japanese);
* ``code``: a line of code or a comment the user hovers or selects in the editor;
* ``error``: an error line pasted from a terminal or a log (numbers, paths and ids may differ from
  the ones in the conversation: the same error seen again).

``when`` places a conversation on the generator's timeline (0 = its first day, 1 = its last), so some
are older than most of the history. A query is answered correctly when a result row belongs to the
labelled conversation's session.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Conversation:
    key: str
    agent: str                       # claude | codex | pi
    cwd: str
    when: float                      # 0..1 on the generator's timeline
    turns: tuple[tuple[str, str], ...]   # (user text, reply)
    question: tuple[str, ...] = ()
    code: tuple[str, ...] = ()
    error: tuple[str, ...] = ()
    entities: tuple[tuple[str, ...], ...] = ()


KINDS = ("entities", "question", "code", "error")

PLANTED: tuple[Conversation, ...] = (
    Conversation(
        "tz-flaky", "claude", "/home/dev/src/salary-svc", 0.18,
        (("test_payslip_dates fails on CI but never on my laptop. It only breaks for runs that start after "
          "23:00. Output: AssertionError: assert datetime.date(2025, 3, 31) == datetime.date(2025, 4, 1)",
          "The test builds its expected date with `date.today()` (local time of the runner) while "
          "`payslip.period_end()` converts to UTC first. CI runs in UTC+0 and your laptop in Europe/Berlin, so "
          "between 23:00 and midnight the two disagree by a day. Freeze the clock and the timezone: use "
          "`freezegun.freeze_time('2025-03-31 23:30', tz_offset=2)` on the test and pass `tz=ZoneInfo('Europe/Berlin')` "
          "explicitly to `period_end`. I also replaced `datetime.utcnow()` with `datetime.now(timezone.utc)`."),),
        question=("how did we fix the flaky timezone test last spring?",
                  "the payslip date test that only failed late at night on CI, what was the cause?"),
        code=("    expected = date.today()  # FIXME: breaks around midnight on CI",),
        error=("AssertionError: assert datetime.date(2026, 1, 31) == datetime.date(2026, 2, 1)",),
        entities=(("freezegun", "period_end"), ("test_payslip_dates",)),
    ),
    Conversation(
        "zeta-ratelimit", "codex", "/home/dev/src/auth-service", 0.42,
        (("Our login endpoint returns 429 to everyone after a deploy. The limiter key is built in "
          "zeta_ratelimit.key_for(request) and Redis shows a single key `rl:None`.",
          "`key_for` reads `request.client_ip`, which is `None` behind the new ingress because the "
          "X-Forwarded-For header is no longer trusted. Every request shares the key `rl:None` and the bucket "
          "of 100 requests per minute empties at once. Fix: enable `trusted_proxies` for the ingress CIDR "
          "and fall back to the session id when there is no address:\n\n```python\ndef key_for(request):\n"
          "    ip = request.client_ip or request.headers.get('x-real-ip')\n    return f\"rl:{ip or request.session_id}\"\n```"),),
        question=("why did everybody get rate limited after the ingress change?",
                  "all logins got 429 too many requests, what was wrong with the limiter key?"),
        code=("    return f\"rl:{ip or request.session_id}\"",),
        error=("HTTP/1.1 429 Too Many Requests  (key=rl:None, limit=100/min)",),
        entities=(("zeta_ratelimit",), ("rl:None", "trusted_proxies")),
    ),
    Conversation(
        "s3-presign", "pi", "/home/dev/src/webshop", 0.63,
        (("Product images uploaded by the admin show for a while and then 403. The URL comes from "
          "s3.getSignedUrl in uploadController.ts.",
          "The signed URL is generated once and stored in the products table, with `Expires: 900` (15 minutes). "
          "After that S3 answers 403 `Request has expired`. Don't store presigned URLs: store the object key and "
          "sign on read, or serve the images through CloudFront with an origin access identity. I changed "
          "`getSignedUrl('getObject', {Bucket, Key, Expires: 900})` to run in `productSerializer.imageUrl()` on "
          "every read and dropped the `image_url` column in a migration."),),
        question=("product pictures turning into 403 after a few minutes, how did we solve that?",
                  "why did the admin uploaded images expire?"),
        code=("const url = await s3.getSignedUrl('getObject', { Bucket: BUCKET, Key: key, Expires: 900 });",),
        error=("<Error><Code>AccessDenied</Code><Message>Request has expired</Message><Expires>2026-05-02T10:14:31Z</Expires>",),
        entities=(("getSignedUrl", "Expires"),),
    ),
    Conversation(
        "jvm-oom", "claude", "/home/dev/work/infra", 0.08,
        (("The reporting pod gets OOMKilled every night around 02:00 although the heap is only -Xmx2g "
          "and the container limit is 3Gi.",
          "With a 3Gi limit and a 2 GiB heap there is only 1 GiB for metaspace, thread stacks, direct "
          "buffers and the JIT; the nightly export uses Netty direct buffers and crosses it. Instead of a fixed "
          "-Xmx, size the heap from the container: `-XX:MaxRAMPercentage=70.0 -XX:MaxDirectMemorySize=256m`, "
          "and turn on `-XX:NativeMemoryTracking=summary` to check. The kernel's OOM killer, not the JVM, "
          "ended the process, which is why there was no heap dump."),),
        question=("the report service kept getting killed at night for memory, what JVM flags did we end up with?",),
        code=("        - \"-XX:MaxRAMPercentage=70.0\"",),
        error=("Last State: Terminated  Reason: OOMKilled  Exit Code: 137",),
        entities=(("MaxRAMPercentage", "OOMKilled"),),
    ),
    Conversation(
        "ts2345", "codex", "/home/dev/src/webshop/frontend", 0.71,
        (("tsc complains in CartSummary.tsx: error TS2345: Argument of type 'string | undefined' is not "
          "assignable to parameter of type 'string'. It started after upgrading react-router to v7.",
          "`useParams()` now types every param as `string | undefined`. `formatCartId(cartId)` expects a "
          "string. Narrow it once at the top of the component: `const { cartId } = useParams(); if (!cartId) "
          "return <NotFound />;` (or `useParams<'cartId'>()` with a runtime check). Avoid the non-null "
          "assertion `cartId!`; the route can be reached without the segment."),),
        question=("the typescript error about undefined route params after the router upgrade",),
        code=("  const total = formatCartId(cartId);",),
        error=("src/components/CartSummary.tsx(42,31): error TS2345: Argument of type 'string | undefined' is not "
               "assignable to parameter of type 'string'.",),
        entities=(("TS2345", "useParams"),),
    ),
    Conversation(
        "seckill-lock", "pi", "/home/dev/work/中文项目", 0.35,
        (("秒杀服务上线后出现超卖，库存变成了负数。我们用 Redis 分布式锁 SETNX 加锁，过期时间 3 秒。",
          "问题在于锁的过期时间比业务执行时间短：扣库存加写订单平均 4 秒，锁提前过期，第二个请求拿到锁后同时扣减。"
          "另外释放锁时直接 DEL，可能删掉别人的锁。修复：改用 Redisson 的看门狗自动续期，释放锁时用 Lua 脚本比较 "
          "value 再删除；同时把扣库存改成 `UPDATE stock SET count = count - 1 WHERE id = ? AND count > 0`，"
          "数据库层面兜底防止超卖。"),),
        question=("之前秒杀服务的分布式锁过期导致超卖，是怎么解决的？", "库存变成负数那次是什么原因"),
        code=("UPDATE stock SET count = count - 1 WHERE id = ? AND count > 0",),
        entities=(("分布式锁", "超卖"), ("Redisson", "看门狗")),
    ),
    Conversation(
        "mysql-deadlock", "claude", "/home/dev/src/salary-svc", 0.52,
        (("月底批量发工资的任务报死锁：Deadlock found when trying to get lock; try restarting transaction。"
          "两个 worker 同时更新 payroll_items。",
          "两个事务以不同的顺序更新同一批行：worker A 按员工编号升序，worker B 按部门分组后更新，互相等待对方持有的"
          "行锁。解决办法：所有更新按主键排序后再执行，并把批次拆小（每批 200 行）；对 1213 错误做有限次数的重试。"
          "另外给 payroll_items(employee_id, period) 加了联合索引，避免间隙锁范围过大。"),),
        question=("发工资批处理的死锁后来怎么处理的", "两个worker互相等锁的那个问题"),
        error=("ERROR 1213 (40001): Deadlock found when trying to get lock; try restarting transaction",),
        entities=(("死锁", "payroll_items"),),
    ),
    Conversation(
        "kafka-rebalance", "codex", "/home/dev/src/data-lake", 0.27,
        (("消费者组一直在 rebalance，日志里反复出现 CommitFailedException，消息被重复消费。",
          "单批处理时间超过了 max.poll.interval.ms（默认 5 分钟）：每次 poll 拉 500 条，每条要写一次 HBase。"
          "超时后 broker 认为消费者死了，触发再均衡，提交 offset 失败。把 max.poll.records 调到 50，处理改成批量写入，"
          "并且把 max.poll.interval.ms 提到 10 分钟；同时消费逻辑做幂等（按消息 key 去重），重复消费就不会出问题。"),),
        question=("kafka 消费者不停重平衡、消息重复消费的问题最后怎么调的参数？",),
        code=("props.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);",),
        error=("org.apache.kafka.clients.consumer.CommitFailedException: Commit cannot be completed since the group "
               "has already rebalanced",),
        entities=(("rebalance", "max.poll.interval.ms"),),
    ),
    Conversation(
        "cache-penetration", "pi", "/home/dev/work/中文项目", 0.88,
        (("商品详情接口被刷，大量请求不存在的商品ID，缓存没命中全部打到数据库，CPU 飙到 100%。",
          "这是缓存穿透。对查不到的商品也缓存一个空值（TTL 60 秒），并在入口加布隆过滤器，把所有合法商品 ID 预热进去，"
          "不在过滤器里的请求直接返回 404。热点 key 过期时的击穿用互斥锁重建。布隆过滤器用 RedisBloom 的 BF.ADD / BF.EXISTS。"),),
        question=("有人用不存在的商品id刷接口把数据库打挂了，我们当时加了什么防护", "缓存穿透怎么防"),
        code=("if not bloom.exists(product_id):  # 布隆过滤器拦截非法ID",),
        entities=(("缓存穿透", "布隆过滤器"),),
    ),
    Conversation(
        "utf8mb4", "claude", "/home/dev/src/ml-pipeline", 0.12,
        (("导入用户评论的时候报错 Incorrect string value: '\\xF0\\x9F\\x98\\x82' for column 'content'，带表情的评论都进不去。",
          "表的字符集是 utf8（MySQL 里的 utf8 只有 3 个字节），存不了 emoji 这种 4 字节字符。把库、表和列都改成 "
          "utf8mb4，排序规则 utf8mb4_0900_ai_ci，连接串里也要加 charset=utf8mb4，否则驱动还是按 3 字节发送。"),),
        question=("评论里有表情符号就插入失败那次是怎么改的",),
        error=("pymysql.err.DataError: (1366, \"Incorrect string value: '\\\\xF0\\\\x9F\\\\x94\\\\xA5' for column 'content' at row 1\")",),
        entities=(("utf8mb4", "emoji"),),
    ),
    Conversation(
        "goroutine-leak", "codex", "/home/dev/src/game-engine", 0.56,
        (("匹配服务跑两天内存就涨到 6G，pprof 看 goroutine 有四十多万个，都卡在 chan send。",
          "每个匹配请求启动一个 goroutine 往 resultCh 发结果，但调用方超时后就不再读这个 channel，发送方永远阻塞，"
          "goroutine 泄漏。改成带缓冲的 channel（容量 1），或者在 select 里同时监听 ctx.Done()：\n\n```go\nselect {\n"
          "case resultCh <- res:\ncase <-ctx.Done():\n}\n```\n之后 goroutine 数稳定在两千左右。"),),
        question=("匹配服务内存一直涨，goroutine 泄漏是怎么修的",),
        code=("case resultCh <- res:",),
        error=("goroutine profile: total 412337\n412001 @ 0x43a4d6 0x4066bd runtime.chansend1",),
        entities=(("goroutine", "ctx.Done"),),
    ),
    Conversation(
        "nginx-502", "pi", "/home/dev/work/infra", 0.21,
        (("上传大文件的时候 nginx 返回 502，后端日志里什么都没有。upstream prematurely closed connection。",
          "gunicorn 的 worker 默认 30 秒超时，上传 2GB 文件时 worker 被 master 杀掉，nginx 就报 502。把上传改成直传对象存储，"
          "临时先把 gunicorn 的 --timeout 提到 300，nginx 里 proxy_read_timeout 300s、client_max_body_size 4g，并关闭 "
          "proxy_request_buffering。"),),
        question=("上传大文件 nginx 报 502 当时怎么排查的",),
        error=("upstream prematurely closed connection while reading response header from upstream, client: 10.0.3.7",),
        entities=(("502", "gunicorn"),),
    ),
    Conversation(
        "jp-n-plus-one", "claude", "/home/dev/src/webshop", 0.47,
        (("注文一覧のAPIが本番だけ遅い。ログを見るとSQLが数百回発行されている。DjangoのORMを使っています。",
          "典型的なN+1問題です。テンプレートで order.customer.name と order.items を参照するたびにクエリが走っています。"
          "ビューのクエリセットに select_related('customer') と prefetch_related('items__product') を追加しました。"
          "django-debug-toolbar でクエリ数が 412 から 3 に減ったことを確認しました。"),),
        question=("注文一覧が遅かったN+1の件、どう直しましたか", "本番だけAPIが遅いのは何が原因だった？"),
        code=("orders = Order.objects.select_related('customer').prefetch_related('items__product')",),
        entities=(("N+1", "prefetch_related"),),
    ),
    Conversation(
        "jp-docker-tz", "codex", "/home/dev/src/ml-pipeline", 0.79,
        (("バッチのcronが9時間ずれて実行されます。コンテナの中で date を叩くとUTCになっている。",
          "python:3.12-slim イメージには tzdata が入っておらず、TZ 環境変数も未設定なのでUTCで動いています。"
          "Dockerfile に `RUN apt-get install -y tzdata` と `ENV TZ=Asia/Tokyo` を追加し、cron の式は日本時間のまま使えるようにしました。"
          "APScheduler 側も timezone='Asia/Tokyo' を明示しています。"),),
        question=("コンテナのタイムゾーンがずれてバッチが9時間遅れた件",),
        code=("ENV TZ=Asia/Tokyo",),
        entities=(("tzdata", "Asia/Tokyo"),),
    ),
    Conversation(
        "jp-memory-leak", "pi", "/home/dev/src/webshop/frontend", 0.31,
        (("ダッシュボード画面を開きっぱなしにするとブラウザのメモリがどんどん増えてタブが落ちる。",
          "useEffect の中で setInterval と WebSocket のリスナーを登録していますが、クリーンアップ関数がないので"
          "再レンダリングのたびに増えていました。useEffect から `return () => { clearInterval(timer); socket.off('tick', onTick); }` "
          "を返すように修正し、Chrome の Memory タブでヒープが安定したことを確認しました。"),),
        question=("ダッシュボードを開いたままにするとメモリリークする問題はどう解決した？",),
        code=("    return () => { clearInterval(timer); socket.off('tick', onTick); };",),
        entities=(("メモリリーク", "clearInterval"),),
    ),
    Conversation(
        "jp-cors", "claude", "/home/dev/src/auth-service", 0.92,
        (("フロントからログインAPIを呼ぶとCORSエラーになる。Access-Control-Allow-Origin は付けているのに。",
          "クッキーを送るために credentials: 'include' を指定している場合、Access-Control-Allow-Origin に * は使えません。"
          "オリジンを明示し、Access-Control-Allow-Credentials: true も返す必要があります。FastAPI の CORSMiddleware で "
          "allow_origins=['https://app.example.jp'], allow_credentials=True に変更しました。"),),
        question=("ログインのCORSエラー、ワイルドカードが原因だったやつ",),
        error=("Access to fetch at 'https://api.example.jp/login' from origin 'https://app.example.jp' has been blocked by CORS "
               "policy: The value of the 'Access-Control-Allow-Origin' header in the response must not be the wildcard '*' "
               "when the request's credentials mode is 'include'.",),
        entities=(("CORSMiddleware", "allow_credentials"),),
    ),
    Conversation(
        "pg-unique", "codex", "/home/dev/src/auth-service", 0.15,
        (("Signup sometimes fails with a 500 when people double-click the button. Sentry shows IntegrityError.",
          "Two requests insert the same email concurrently; the check `User.objects.filter(email=...).exists()` "
          "passes for both and the second INSERT hits the unique index `users_email_key`. Catch the IntegrityError "
          "and answer 409, or use `INSERT ... ON CONFLICT (email) DO NOTHING RETURNING id`. Also normalise the "
          "email with `lower()` first: the index is on lower(email)."),),
        question=("double clicking sign up gave a server error, what did we do about the duplicate users?",),
        error=("psycopg2.errors.UniqueViolation: duplicate key value violates unique constraint \"users_email_key\"",),
        code=("INSERT INTO users (email, password_hash) VALUES (%s, %s) ON CONFLICT (email) DO NOTHING RETURNING id",),
        entities=(("users_email_key", "IntegrityError"),),
    ),
    Conversation(
        "webpack-chunk", "pi", "/home/dev/src/webshop/frontend", 0.58,
        (("After every deploy some users get a white screen. The console says ChunkLoadError: Loading chunk 731 failed.",
          "Users with the old index.html still request the previous build's hashed chunks, which the deploy "
          "deleted. Keep the previous release's assets for a day (upload with `--no-delete`), serve index.html with "
          "`Cache-Control: no-cache`, and catch ChunkLoadError in the lazy() wrapper to reload the page once."),),
        question=("why do people see a blank page right after we ship a new frontend build?",),
        error=("ChunkLoadError: Loading chunk 8412 failed. (error: https://shop.example.com/static/js/8412.3f9c2a.chunk.js)",),
        code=("const Checkout = lazyWithReload(() => import('./pages/Checkout'));",),
        entities=(("ChunkLoadError",),),
    ),
    Conversation(
        "gradle-oom", "claude", "/home/dev/src/mobile-app", 0.05,
        (("The Android build dies on CI in :app:mergeDexRelease with Java heap space. Locally it works.",
          "The CI runner has 4 GB and Gradle's daemon gets the default 512 MB heap; dexing the release build needs "
          "more. Set `org.gradle.jvmargs=-Xmx3g -XX:+UseParallelGC` in gradle.properties and disable the daemon on CI "
          "(`--no-daemon`) so the settings apply to the single build process. Also enabled "
          "`android.enableR8.fullMode=false` for now, R8 full mode doubled memory use."),),
        question=("the android release build that ran out of memory on the CI runner",),
        error=("Execution failed for task ':app:mergeDexRelease'. > java.lang.OutOfMemoryError: Java heap space",),
        code=("org.gradle.jvmargs=-Xmx3g -XX:+UseParallelGC",),
        entities=(("mergeDexRelease", "jvmargs"),),
    ),
    Conversation(
        "pytest-fixture-leak", "codex", "/home/dev/src/pimem", 0.66,
        (("The test suite passes file by file but fails when run all together: test_export_csv sees rows from another test.",
          "The `db` fixture is `scope=\"session\"` and tests commit instead of rolling back, so rows leak across "
          "tests. Make it function-scoped with a SAVEPOINT per test (`conn.begin_nested()` and rollback in the "
          "finaliser), and run `pytest -p no:randomly` once to confirm the order dependence, then with "
          "`pytest-randomly` again."),),
        question=("tests that pass alone but fail in the full run because of leftover rows",),
        code=("@pytest.fixture(scope=\"session\")\ndef db(engine):",),
        error=("FAILED tests/test_export.py::test_export_csv - AssertionError: assert 7 == 3",),
        entities=(("begin_nested", "pytest-randomly"),),
    ),
    Conversation(
        "celery-dup", "pi", "/home/dev/src/salary-svc", 0.38,
        (("Some employees received the payout email twice. The send_payout_mail Celery task ran twice for the same id.",
          "With `acks_late=True` and Redis as the broker, a task that runs longer than the `visibility_timeout` (1 hour "
          "by default) is delivered again to another worker. The mail batch for big companies takes 70 minutes. "
          "Raise `broker_transport_options = {'visibility_timeout': 4 * 3600}` and make the task idempotent: record "
          "`payout_mail_sent_at` and skip when it is set."),),
        question=("why did the payout email go out twice to some people?",),
        code=("broker_transport_options = {'visibility_timeout': 4 * 3600}",),
        entities=(("visibility_timeout", "acks_late"),),
    ),
    Conversation(
        "k8s-crashloop", "claude", "/home/dev/work/infra", 0.83,
        (("The new billing-worker deployment is in CrashLoopBackOff, logs are empty.",
          "The container exits immediately because the liveness probe hits `/healthz` on port 8080 after 5 seconds "
          "while the app needs 40 seconds to load its models, so the kubelet kills it before it logs anything. Add a "
          "`startupProbe` with `failureThreshold: 30` and `periodSeconds: 2`, and keep the liveness probe for later. "
          "`kubectl describe pod` showed `Liveness probe failed: connection refused`."),),
        question=("the billing worker pod kept restarting with nothing in its logs",),
        error=("Warning  Unhealthy  kubelet  Liveness probe failed: Get \"http://10.42.1.17:8080/healthz\": dial tcp "
               "10.42.1.17:8080: connect: connection refused",),
        code=("        startupProbe:\n          failureThreshold: 30",),
        entities=(("startupProbe", "CrashLoopBackOff"),),
    ),
    Conversation(
        "git-lfs", "codex", "/home/dev/src/game-engine", 0.24,
        (("Cloning the repo on the build agent gives textures that are 130-byte text files, and the game crashes loading them.",
          "Those are Git LFS pointer files: the agent has no git-lfs installed, so the checkout keeps the pointers. "
          "Install git-lfs in the agent image, run `git lfs install --system`, and in the pipeline use "
          "`git lfs pull --include=\"assets/textures/**\"`. The crash came from `stbi_load` returning NULL."),),
        question=("textures in the CI checkout were tiny text files instead of images",),
        error=("version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393",),
        entities=(("git-lfs", "stbi_load"),),
    ),
    Conversation(
        "regex-catastrophic", "pi", "/home/dev/src/docs-site", 0.49,
        (("Building the docs hangs forever on one markdown file, CPU at 100%.",
          "The link checker's pattern `^(\\w+\\s?)*$` backtracks exponentially on a long line without a match "
          "(catastrophic backtracking). Rewrite it without the nested quantifier, `^[\\w\\s]*$`, or use the `regex` "
          "module with a timeout. I added a test with a 5,000-character line."),),
        question=("the docs build that froze on a single markdown page",),
        code=("LINK_LINE = re.compile(r\"^(\\w+\\s?)*$\")",),
        entities=(("catastrophic backtracking",),),
    ),
    Conversation(
        "sqlite-locked", "claude", "/home/dev/src/pimem", 0.74,
        (("The importer crashes with database is locked when the watcher and a manual sync run at the same time.",
          "Both open the store in rollback-journal mode with the default busy timeout of 0, so the second writer "
          "fails at once. Switch to WAL (`PRAGMA journal_mode=WAL`), set `busy_timeout=15000`, and keep write "
          "transactions short by committing every 400 turns instead of once per file."),),
        question=("two syncs at once crashed with a locking error, what settings fixed it?",),
        error=("sqlite3.OperationalError: database is locked",),
        code=("conn.execute(\"PRAGMA busy_timeout = 15000\")",),
        entities=(("busy_timeout", "journal_mode"),),
    ),
    Conversation(
        "ssl-cert", "codex", "/home/dev/src/data-lake", 0.1,
        (("The nightly job that pulls exchange rates fails since Monday: certificate verify failed: unable to get "
          "local issuer certificate.",
          "The provider switched to a certificate chained to a new intermediate, and the slim image's CA bundle "
          "is old. `requests` uses certifi, so upgrade `certifi` and install `ca-certificates` in the image; do "
          "not set `verify=False`. `openssl s_client -connect api.rates.example:443 -showcerts` showed the missing "
          "intermediate."),),
        question=("the exchange rate download broke because of some certificate problem",),
        error=("requests.exceptions.SSLError: HTTPSConnectionPool(host='api.rates.example', port=443): Max retries "
               "exceeded with url: /v2/latest (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
               "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer certificate')))",),
        entities=(("certifi", "CERTIFICATE_VERIFY_FAILED"),),
    ),
    Conversation(
        "float-money", "pi", "/home/dev/src/salary-svc", 0.3,
        (("Totals on the monthly statement are off by one cent for some employees, 1234.565 becomes 1234.56.",
          "Amounts are floats: 1234.565 is stored as 1234.56499999…, and `round()` rounds half to even anyway. "
          "Use `Decimal` end to end (`Decimal('1234.565').quantize(Decimal('0.01'), rounding=ROUND_HALF_UP)`), read "
          "the column as NUMERIC(12,2) and parse JSON with `parse_float=Decimal`."),),
        question=("statement totals one cent off, how did we handle rounding of money?",),
        code=("total = round(sum(item.amount for item in items), 2)",),
        entities=(("ROUND_HALF_UP", "Decimal"),),
    ),
    Conversation(
        "cron-dst", "claude", "/home/dev/work/infra", 0.02,
        (("The backup job ran twice on the last Sunday of October and not at all in March.",
          "It is scheduled at 02:30 local time in a zone with daylight saving: in March 02:30 does not exist and in "
          "October it happens twice. Schedule it in UTC (`CRON_TZ=UTC 30 1 * * *`) or pick a time outside 01:00–03:00."),),
        question=("the backup that ran twice in autumn and skipped in march",),
        code=("CRON_TZ=UTC\n30 1 * * * /usr/local/bin/backup.sh",),
        entities=(("CRON_TZ", "daylight saving"),),
    ),
    Conversation(
        "react-hydration", "codex", "/home/dev/src/webshop/frontend", 0.9,
        (("Next.js prints Hydration failed because the initial UI does not match what was rendered on the server, "
          "only on the product page.",
          "`<PriceTag>` renders `new Date().toLocaleString()` for the sale countdown; the server and the browser "
          "produce different strings (time and locale). Render the countdown only on the client (`useEffect` + state, "
          "or `dynamic(() => import('./Countdown'), { ssr: false })`)."),),
        question=("hydration mismatch on the product page, what caused it?",),
        error=("Error: Hydration failed because the initial UI does not match what was rendered on the server.",),
        code=("  return <span className=\"countdown\">{new Date(endsAt).toLocaleString()}</span>;",),
        entities=(("Hydration", "toLocaleString"),),
    ),
    Conversation(
        "grpc-deadline", "pi", "/home/dev/src/ml-pipeline", 0.44,
        (("The feature service calls the embedding server over gRPC and about 2% of calls fail with "
          "DEADLINE_EXCEEDED at peak.",
          "The client sets a 200 ms deadline, but the server batches requests for up to 150 ms before running the "
          "model, so queueing plus inference crosses it at peak. Lower `max_batch_delay_ms` to 20, give the call a "
          "500 ms deadline with one retry (retry policy in the service config, `retryableStatusCodes: "
          "[\"UNAVAILABLE\"]` only), and export the batch wait as a metric."),),
        question=("embedding calls timing out under load, what did we change in batching?",),
        error=("grpc._channel._InactiveRpcError: <_InactiveRpcError of RPC that terminated with: status = "
               "StatusCode.DEADLINE_EXCEEDED details = \"Deadline Exceeded\">",),
        entities=(("DEADLINE_EXCEEDED", "max_batch_delay_ms"),),
    ),
    Conversation(
        "elastic-mapping", "claude", "/home/dev/src/data-lake", 0.6,
        (("Search for order numbers like SO-2024-0012 returns nothing although the documents are in the index.",
          "The `order_no` field is mapped as `text`, so the standard analyzer splits it into `so`, `2024`, `0012` "
          "and a `term` query for the whole value never matches. Map it as `keyword` (with a `text` subfield for "
          "partial search), reindex with the `_reindex` API into `orders-v2` and switch the alias."),),
        question=("searching by order number found nothing in elasticsearch",),
        code=("\"order_no\": { \"type\": \"keyword\", \"fields\": { \"text\": { \"type\": \"text\" } } }",),
        entities=(("order_no", "keyword", "_reindex"),),
    ),
    Conversation(
        "python-circular", "codex", "/home/dev/src/pimem", 0.33,
        (("After moving the models into their own module I get ImportError: cannot import name 'Invoice' from "
          "partially initialized module 'billing.models'.",
          "`billing/models.py` imports `billing.pricing` at the top for a type hint, and `pricing.py` imports "
          "`Invoice` from `billing.models`: a cycle. Move the import under `if TYPE_CHECKING:` and use the string "
          "annotation `'Invoice'`, or pass the price function in."),),
        question=("the import cycle between billing models and pricing",),
        error=("ImportError: cannot import name 'Invoice' from partially initialized module 'billing.models' (most "
               "likely due to a circular import) (/srv/app/backend/billing/models.py)",),
        code=("from billing.pricing import price_for  # noqa: E402",),
        entities=(("TYPE_CHECKING", "circular import"),),
    ),
    Conversation(
        "wasm-stack", "pi", "/home/dev/src/game-engine", 0.97,
        (("The physics step compiled to WebAssembly crashes in Firefox with RuntimeError: index out of bounds, "
          "but only with more than 300 bodies.",
          "The solver allocates the contact array on the stack (`alloca` in the C++), and emscripten's default stack "
          "is 64 KB since 3.1.27. Allocate it on the heap (a `std::vector` reused between steps) or link with "
          "`-sSTACK_SIZE=1MB`. `-sASSERTIONS=2` reported the stack overflow clearly."),),
        question=("physics crashing in the browser build with many bodies",),
        error=("Uncaught RuntimeError: index out of bounds\n    at physics.wasm:0x2f41a",),
        code=("  Contact* contacts = (Contact*)alloca(sizeof(Contact) * pairCount);",),
        entities=(("STACK_SIZE", "emscripten"),),
    ),
    Conversation(
        "csv-bom", "claude", "/home/dev/src/salary-svc", 0.68,
        (("The import of the bank CSV says KeyError: 'iban' but the header clearly has an iban column.",
          "The file starts with a UTF-8 byte order mark, so the first header is '\\ufeffiban'. Open it with "
          "`encoding='utf-8-sig'`, which strips the BOM, and strip the header names."),),
        question=("csv import claimed a column was missing although it was there",),
        error=("KeyError: 'iban'",),
        code=("with open(path, newline='', encoding='utf-8') as handle:",),
        entities=(("utf-8-sig", "BOM"),),
    ),
    Conversation(
        "rust-borrow", "codex", "/home/dev/src/cli-tools", 0.4,
        (("rustc: error[E0502]: cannot borrow `self.entries` as mutable because it is also borrowed as immutable, "
          "in fn refresh.",
          "`for entry in self.entries.iter()` keeps an immutable borrow alive while `self.entries.push(...)` needs a "
          "mutable one. Collect the new entries first (`let fresh: Vec<_> = ...collect();`) and extend after the "
          "loop, or iterate over indices."),),
        question=("the borrow checker error in refresh when pushing inside the loop",),
        error=("error[E0502]: cannot borrow `self.entries` as mutable because it is also borrowed as immutable",),
        code=("        for entry in self.entries.iter() {",),
        entities=(("E0502", "self.entries"),),
    ),
    Conversation(
        "redis-maxmemory", "pi", "/home/dev/src/webshop", 0.54,
        (("Redis started refusing writes: OOM command not allowed when used memory > 'maxmemory'. Sessions stopped working.",
          "`maxmemory` is 2gb with the policy `noeviction`, and the cart cache keys have no TTL, so memory only "
          "grows. Give cache keys a TTL, move sessions to their own database or instance, and use "
          "`maxmemory-policy allkeys-lru` for the cache instance."),),
        question=("redis stopped accepting writes and logins broke, what policy did we set?",),
        error=("OOM command not allowed when used memory > 'maxmemory'.",),
        entities=(("maxmemory-policy", "noeviction"),),
    ),
    Conversation(
        "zh-es-shard", "claude", "/home/dev/src/data-lake", 0.86,
        (("日志集群查询越来越慢，一个索引有 2000 多个分片，master 节点经常卡住。",
          "每天按服务建索引，每个索引 5 个主分片，一年下来分片数量爆炸，集群状态太大。改成按周滚动的数据流，"
          "用 ILM 策略：热节点 7 天、温节点 30 天后删除；主分片数按每个分片 30GB 左右来算。合并旧索引用 _shrink。"),),
        question=("日志集群分片太多导致查询变慢，后来怎么规划的", "ES 分片数爆炸"),
        entities=(("分片", "ILM"),),
    ),
    Conversation(
        "zh-oauth-state", "codex", "/home/dev/src/auth-service", 0.64,
        (("微信登录回调偶尔报 state 不匹配，用户要点两次才能登录成功。",
          "state 存在服务端 session 里，但回调请求落到了另一台机器上，session 没有共享。把 state 放进签名的 cookie（"
          "SameSite=Lax），或者把 session 存到 Redis。另外同一个用户开两个标签页会互相覆盖 state，改成按 state 值为 key 存。"),),
        question=("微信登录要点两次才成功的问题",),
        error=("OAuthCallbackError: state mismatch (expected 8f1c2e, got 3b77d0)",),
        entities=(("state", "微信登录"),),
    ),
    Conversation(
        "jp-unicode-normalize", "pi", "/home/dev/src/docs-site", 0.16,
        (("検索で「ガ」を含む商品名がヒットしない。Macから登録したデータだけ。",
          "macOS のファイル名やクリップボード経由の文字列は NFD（濁点が分離した形）になっていることがあります。"
          "検索側は NFC なので一致しません。保存時と検索時の両方で unicodedata.normalize('NFKC', text) をかけるようにしました。"),),
        question=("Macで登録した商品名だけ検索にヒットしなかった原因は？",),
        code=("name = unicodedata.normalize('NFKC', name)",),
        entities=(("NFKC", "濁点"),),
    ),
    Conversation(
        "jp-flaky-e2e", "claude", "/home/dev/src/webshop/frontend", 0.72,
        (("PlaywrightのE2Eテストがたまに落ちる。カートに追加ボタンを押した後のアサーションがタイムアウトする。",
          "ボタンのクリック直後に waitForTimeout(500) で待っていて、APIが遅いと間に合いません。固定の待ち時間をやめて "
          "`await expect(page.getByTestId('cart-count')).toHaveText('1')` のように自動リトライするアサーションに変え、"
          "ネットワークは page.route でモックしました。"),),
        question=("カート追加のE2Eテストが不安定だったのをどう直した？",),
        code=("await page.waitForTimeout(500);",),
        entities=(("waitForTimeout", "Playwright"),),
    ),
    Conversation(
        "multi-turn-pagination", "codex", "/home/dev/src/webshop", 0.5,
        (("The admin order list shows duplicates and skips rows when paging while new orders come in.",
          "Offset pagination over a table that changes shifts the window. I'll look at how the list is queried."),
         ("It's ORDER BY created_at DESC LIMIT 50 OFFSET ?.",
          "Switch to keyset pagination: remember the last `(created_at, id)` of a page and ask for "
          "`WHERE (created_at, id) < (%s, %s) ORDER BY created_at DESC, id DESC LIMIT 50`; the tie-breaker `id` makes "
          "the order total. The API now returns an opaque `next_cursor`.")),
        question=("orders showing up twice when flipping pages in the admin",),
        code=("WHERE (created_at, id) < (%s, %s) ORDER BY created_at DESC, id DESC LIMIT 50",),
        entities=(("keyset pagination", "next_cursor"),),
    ),
    Conversation(
        "multi-turn-webhook", "claude", "/home/dev/src/webshop", 0.77,
        (("Stripe says our webhook endpoint fails signature verification for every event since we moved it.",
          "Which framework handles it now, and is a body parser in front of it?"),
         ("Express, with app.use(express.json()) at the top.",
          "`stripe.webhooks.constructEvent` needs the raw bytes of the body; `express.json()` has already parsed and "
          "re-serialised it, so the HMAC differs. Mount `express.raw({ type: 'application/json' })` on the webhook "
          "route before the JSON parser and pass `req.body` (a Buffer) to `constructEvent`.")),
        question=("stripe webhooks failing signature check after we moved the endpoint",),
        error=("StripeSignatureVerificationError: No signatures found matching the expected signature for payload.",),
        code=("app.post('/webhooks/stripe', express.raw({ type: 'application/json' }), handleStripeWebhook);",),
        entities=(("constructEvent", "express.raw"),),
    ),
)

# Conversations on the same topics as planted ones but about another problem: the words a question
# shares with its conversation are not enough to find it.
NEAR_MISSES: tuple[Conversation, ...] = (
    Conversation("nm-tz-format", "pi", "/home/dev/src/salary-svc", 0.9,
                 (("Show the payslip date in the employee's timezone in the PDF.",
                   "Pass the employee's zone to the template and format with `babel.dates.format_date`; the test "
                   "checks Berlin and New York."),)),
    Conversation("nm-tz-flaky-ui", "codex", "/home/dev/src/webshop/frontend", 0.95,
                 (("The snapshot test of the calendar widget is flaky, it depends on today's date.",
                   "Mock the date with `vi.setSystemTime` in the test setup so the snapshot is stable."),)),
    Conversation("nm-ratelimit-api", "claude", "/home/dev/src/webshop", 0.85,
                 (("Add rate limiting to the public search API, 10 requests per second per API key.",
                   "Added a token bucket in the gateway keyed by the API key; it answers 429 with Retry-After."),)),
    Conversation("nm-s3-upload", "codex", "/home/dev/src/webshop", 0.93,
                 (("Uploads of product images larger than 5 MB fail from the admin.",
                   "Use multipart upload for large files; the admin now uploads images in 5 MB parts."),)),
    Conversation("nm-jvm-gc", "pi", "/home/dev/work/infra", 0.8,
                 (("GC pauses of the report service are long, up to 2 seconds.",
                   "Switched to G1 with -XX:MaxGCPauseMillis=200; memory settings unchanged."),)),
    Conversation("nm-zh-lock", "claude", "/home/dev/work/中文项目", 0.96,
                 (("Redis 分布式锁怎么实现可重入？",
                   "可重入锁需要记录持有者和重入次数，可以用 Hash 结构，Redisson 已经实现了。"),)),
    Conversation("nm-zh-stock", "codex", "/home/dev/work/中文项目", 0.91,
                 (("库存服务的接口文档更新一下，加上扣减库存的说明。",
                   "已经在文档里补充了扣减库存接口的参数和返回值说明。"),)),
    Conversation("nm-zh-cache", "pi", "/home/dev/work/中文项目", 0.94,
                 (("商品缓存的过期时间设置多久合适？",
                   "商品详情建议 10 分钟，并加上随机抖动，避免大量缓存同时过期导致雪崩。"),)),
    Conversation("nm-jp-test", "claude", "/home/dev/src/webshop/frontend", 0.97,
                 (("テストのカバレッジを上げたい。どのファイルから手をつけるべき？",
                   "カバレッジレポートを見ると cart と checkout のテストが足りていません。"),)),
    Conversation("nm-jp-slow", "codex", "/home/dev/src/webshop", 0.92,
                 (("商品検索のAPIが遅いので改善したい。",
                   "検索クエリにインデックスを追加し、レスポンスをキャッシュしました。"),)),
    Conversation("nm-k8s-probe", "pi", "/home/dev/work/infra", 0.89,
                 (("Add a readiness probe to the api deployment.",
                   "Added a readinessProbe on /ready with periodSeconds: 5."),)),
    Conversation("nm-memory-report", "claude", "/home/dev/work/infra", 0.87,
                 (("Write a report of memory usage per pod for last week.",
                   "Here is a Prometheus query for the memory usage per pod over the last 7 days."),)),
    Conversation("nm-stripe-refund", "codex", "/home/dev/src/webshop", 0.98,
                 (("Add refunds through Stripe to the admin.",
                   "Added a refund button that calls `stripe.refunds.create` and records the refund."),)),
    Conversation("nm-pagination-api", "pi", "/home/dev/src/webshop", 0.96,
                 (("Document the pagination parameters of the public orders API.",
                   "The docs now describe `page` and `per_page` with their limits."),)),
)
