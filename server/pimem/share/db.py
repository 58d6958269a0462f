"""Connections to the shared store, its layout, and ``pimem share init --apply``. psycopg is imported
here and in the other ``pimem.share`` modules only."""

from __future__ import annotations

import psycopg

from pimem.share.schema import DEFAULT_GROUP, LAYOUT, SCHEMA, ShareLayout, ShareSchemaError, init_sql

CONNECT_TIMEOUT_S = 5


class ShareError(RuntimeError):
    """A one-line failure of the shared store (unreachable, refused, wrong layout): the CLI prints it."""


def connect(conninfo: str, *, autocommit: bool = False) -> psycopg.Connection[tuple[object, ...]]:
    """A connection as the connection string (or ``service=NAME``) says: TLS, user and password (from
    libpq's passfile or service file when not in the string) are libpq's business."""
    try:
        return psycopg.connect(conninfo, autocommit=autocommit, connect_timeout=CONNECT_TIMEOUT_S,
                               application_name="pimem")
    except psycopg.Error as exc:
        raise ShareError(f"cannot reach the shared store: {one_line(exc)}") from None


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def read_layout(conn: psycopg.Connection[tuple[object, ...]]) -> ShareLayout:
    exists = conn.execute("SELECT to_regclass(%s)", (f"{SCHEMA}.pimem_share_meta",)).fetchone()
    if exists is None or exists[0] is None:
        return ShareLayout(0, 0, None)
    meta = {str(k): str(v) for k, v in conn.execute(f"SELECT key, value FROM {SCHEMA}.pimem_share_meta")}
    try:
        layout = int(meta.get("layout", "0"))
        min_reader = int(meta.get("min_reader_layout", str(layout)))
    except ValueError:
        raise ShareError(f"the shared store's layout is unreadable ({meta.get('layout')!r})") from None
    return ShareLayout(layout, min_reader, meta.get("layout_written_by"))


def check_writable(layout: ShareLayout) -> None:
    if layout.layout == 0:
        raise ShareError("the shared store has no pimem schema yet: its admin runs `pimem share init --apply`")
    if layout.newer:
        by = f"pimem {layout.written_by}" if layout.written_by else "a newer pimem"
        raise ShareError(f"the shared store was set up by {by} (layout {layout.layout}); this pimem writes up to "
                         f"layout {LAYOUT}: please upgrade")
    if layout.layout < LAYOUT:
        raise ShareError(f"the shared store has layout {layout.layout}; this pimem needs {LAYOUT}: its admin "
                         "runs `pimem share init --apply` with this pimem to migrate it")


def apply_init(admin_conninfo: str, group: str = DEFAULT_GROUP, members: tuple[str, ...] = ()) -> ShareLayout:
    """Create or migrate the schema and set up the roles, in one transaction, as the admin."""
    with connect(admin_conninfo, autocommit=True) as conn:
        try:
            layout = read_layout(conn)
            sql = init_sql(group, members, from_layout=layout.layout)
            conn.execute(sql.encode())  # one simple-query batch: BEGIN ... COMMIT
            return read_layout(conn)
        except ShareSchemaError as exc:
            raise ShareError(str(exc)) from None
        except psycopg.Error as exc:
            raise ShareError(f"pimem share init failed: {one_line(exc)}") from None
