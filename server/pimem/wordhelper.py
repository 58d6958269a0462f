"""A helper process for a large index build: it makes each batch's word texts
(:func:`pimem.words.word_texts`, Python regex and string work: ~1.1 s of the ~10 s CPU of a first
import of 20,000 generated turns) while the building process writes the batch's trigram postings, so
that work leaves the single writer's path and a first import uses a second core during its index
build (the parse uses two already). It moves CPU time, it does not remove it (docs/benchmarks.md,
r14-import).

The helper is a plain interpreter that imports :mod:`pimem.words` only (~0.06 s of CPU, ~16 MB): it
reads requests from its standard input (a list of texts, pickled, after its length) and answers each on
its standard output in the same way, and ends when its input closes, so it cannot outlive the process
that started it. It is asked one batch at a time; anything that goes wrong with it (it cannot start, it
died) makes the caller compute the texts itself (:meth:`WordHelper.start` never fails for that reason).
The texts it makes are those :func:`pimem.words.word_texts` makes in the caller: the same code.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

from pimem import words

log = logging.getLogger("pimem.index")

MIN_DOCS = 5_000   # a smaller build makes its word texts itself (the helper's start costs ~0.06 s CPU)
_LENGTH = struct.Struct("<Q")


PIPE_BYTES = 1 << 20   # Linux's largest pipe for a process without privileges (its default: 64 KB)


def _widen(fd: int) -> None:
    """Let the pipe hold :data:`PIPE_BYTES` (where the system allows it): a batch's texts are
    megabytes, and through a 64 KB pipe each of them needs the helper scheduled every 64 KB, which a
    loaded machine delays by milliseconds each time (a batch then waited on its texts for seconds)."""
    try:
        import fcntl
    except ImportError:   # not a POSIX system: pipes as they are
        return
    with contextlib.suppress(AttributeError, OSError):   # not Linux, or a smaller limit: as it was
        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, PIPE_BYTES)


def wanted(pending: int) -> bool:
    """Whether a build of ``pending`` docs is worth a helper: enough docs, and a core to spare. The
    helper costs CPU (its start, the texts through a pipe, and the same Python work made a little
    slower by two processes sharing the caches): with a core idle it takes ~1 s off a 20,000-turn
    import's wall time, on a machine whose cores are all busy it makes the import slower (measured on
    2 cores: docs/benchmarks.md, r14-import). A core is taken to be idle when the 1-minute load
    average (which counts this process) is below the number of cores."""
    cores = os.cpu_count() or 1
    if pending < MIN_DOCS or cores < 2:
        return False
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):   # no load average (Windows): the cores alone decide
        return True
    return load < cores


def _write(stream: IO[bytes], value: object) -> None:
    data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    stream.write(_LENGTH.pack(len(data)))
    stream.write(data)
    stream.flush()


def _read(stream: IO[bytes]) -> object | None:
    """The next value on ``stream``; None at its end."""
    head = stream.read(_LENGTH.size)
    if len(head) < _LENGTH.size:
        return None
    size = _LENGTH.unpack(head)[0]
    data = stream.read(size)
    if len(data) < size:
        return None
    value: object = pickle.loads(data)
    return value


Answer = list[tuple[str | None, str]]


def answer(texts: list[str]) -> Answer:
    """What the helper sends back for ``texts``: per text, :func:`pimem.words.word_text_pieces`, the
    first piece left out (None) when it is the text itself (most texts: the answer is then a fraction
    of the request)."""
    made: Answer = []
    for text in texts:
        body, tail = words.word_text_pieces(text)
        made.append((None if body is text else body, tail))
    return made


def word_texts(texts: list[str], made: Answer) -> list[str]:
    """The word texts of ``texts`` from the helper's :func:`answer`."""
    return [(text if body is None else body) + tail for text, (body, tail) in zip(texts, made, strict=True)]


def serve(requests: IO[bytes] | None = None, answers: IO[bytes] | None = None) -> None:
    """The helper's loop: :func:`answer` to every list of texts read, until the input ends."""
    requests = requests or sys.stdin.buffer
    answers = answers or sys.stdout.buffer
    while (texts := _read(requests)) is not None:
        assert isinstance(texts, list)
        _write(answers, answer(texts))


class WordHelper:
    """One helper process (see the module docstring), used as a context manager around a build."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[bytes] | None = None
        self.served = 0   # batches whose texts the helper made
        root = str(Path(words.__file__).resolve().parent.parent)   # where this pimem is imported from
        code = f"import sys; sys.path.insert(0, {root!r}); from pimem.wordhelper import serve; serve()"
        try:
            self.process = subprocess.Popen([sys.executable, "-c", code], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError as error:
            log.info("index build: no word helper process (%s); word texts made here", error)
            return
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                _widen(stream.fileno())

    def __enter__(self) -> WordHelper:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def close(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def start(self, texts: list[str]) -> Callable[[], list[str]]:
        """Send ``texts`` to the helper; the function returned gives their word texts (made here if the
        helper cannot). A thread sends the request and reads the answer: a batch's texts are megabytes,
        a pipe holds 64 KB, and the build must not wait for the helper to be scheduled between every
        64 KB of them (on a loaded machine that stalled the build for seconds)."""
        process = self.process
        if process is None or process.stdin is None or process.stdout is None:
            return lambda: words.word_texts(texts)
        requests, answers = process.stdin, process.stdout
        received: list[object] = []

        def exchange() -> None:
            try:
                _write(requests, texts)
                received.append(_read(answers))
            except (OSError, ValueError, EOFError, pickle.UnpicklingError):
                pass

        exchanging = threading.Thread(target=exchange, name="pimem-word-helper", daemon=True)
        exchanging.start()

        def result() -> list[str]:
            exchanging.join()
            made = received[0] if received else None
            if isinstance(made, list) and len(made) == len(texts):
                self.served += 1
                return word_texts(texts, made)
            self._failed()
            return words.word_texts(texts)
        return result

    def _failed(self) -> None:
        log.warning("index build: the word helper process stopped; word texts made here")
        if self.process is not None:
            self.process.kill()
        self.close()
