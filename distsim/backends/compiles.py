"""Kernel compiles as they happen, so that the user hears of one exactly when it starts, and never of a
cached load.

Two kinds: Numba compiling a distsim function (a miss of Numba's disk cache: ``cache=True`` on every
``njit``; Numba reports it as its ``numba:compile`` event, listened to from Numba's import) and
NVRTC compiling a CUDA module (a miss of :func:`distsim.backends.cuda.load_module`'s disk cache).
Outside a task each outermost compile prints :func:`message` to stderr (e.g. the client's histogram
pilot). A shard task (``engine.executor``) runs under :func:`announce` with its own callback (printed
here, and sent from a Dask worker to the client), called at the task's first compile only.
Compile seconds and counts are kept per thread (:func:`seconds`, :func:`count`).
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import sys
import threading
import time
from typing import Any, Callable, Iterator

Notice = Callable[[str, str], None]  # (kind 'cpu' | 'gpu', what: 'Numba <function>' | 'NVRTC')

_local = threading.local()
_installed = False
_install_lock = threading.Lock()


def message(kind: str, what: str, where: str | None = None) -> str:
    """The notice of a compile (``kind`` 'cpu' for Numba, 'gpu' for NVRTC; ``where``: a worker)."""
    return (f"[distsim] {where + ': ' if where else ''}compiling {'CPU (Numba)' if kind == 'cpu' else 'GPU (NVRTC)'}"
            f" kernels on first use ({what}); kept on disk, later runs load them ...")


def _print(kind: str, what: str) -> None:
    print(message(kind, what), file=sys.stderr, flush=True)


def _state() -> threading.local:
    if not hasattr(_local, "depth"):
        _local.depth, _local.seconds, _local.count, _local.notice, _local.told = 0, 0.0, 0, _print, False
        _local.scoped = False
    return _local


@contextlib.contextmanager
def compiling(kind: str, what: str) -> Iterator[None]:
    """Around a compile (nested compiles count once): announces it and adds its seconds to this thread."""
    st = _state()
    st.depth += 1
    t0 = time.perf_counter()
    try:
        if st.depth == 1:
            st.count += 1
            if st.notice is not None and not (st.scoped and st.told):
                st.told = True
                st.notice(kind, what)
        yield
    finally:
        st.depth -= 1
        if st.depth == 0:
            st.seconds += time.perf_counter() - t0


def seconds() -> float:
    """Seconds this thread has spent compiling (both kinds) since it started."""
    return _state().seconds


def count() -> int:
    """Compiles (outermost) this thread has started."""
    return _state().count


@contextlib.contextmanager
def announce(notice: Notice | None) -> Iterator[None]:
    """Call ``notice(kind, what)`` at the first compile started in this thread while the block runs
    (``None``: say nothing)."""
    st = _state()
    saved = st.notice, st.told, st.scoped
    st.notice, st.told, st.scoped = notice, False, True
    try:
        yield
    finally:
        st.notice, st.told, st.scoped = saved


def watch_numba() -> None:
    """Listen (once per process) to Numba's compile events of distsim functions."""
    global _installed
    if _installed:
        return
    with _install_lock:
        if _installed:
            return
        from numba.core import event

        class _Listener(event.Listener):
            def __init__(self) -> None:
                self._open: dict[int, list[contextlib.ExitStack]] = {}

            def _ours(self, ev: event.Event) -> str | None:
                disp = (ev.data or {}).get("dispatcher")
                fn = getattr(disp, "py_func", None)
                mod = getattr(fn, "__module__", "") or ""
                return f"Numba {mod}.{fn.__qualname__}" if mod.split(".")[0] == "distsim" else None

            def on_start(self, ev: event.Event) -> None:
                what = self._ours(ev)
                if what is not None:
                    stack = contextlib.ExitStack()
                    stack.enter_context(compiling("cpu", what))
                    self._open.setdefault(threading.get_ident(), []).append(stack)

            def on_end(self, ev: event.Event) -> None:
                if self._ours(ev) is not None:
                    stacks = self._open.get(threading.get_ident())
                    if stacks:
                        stacks.pop().close()

        event.register("numba:compile", _Listener())
        _installed = True


class _AfterNumbaImport(importlib.abc.MetaPathFinder):
    """Calls :func:`watch_numba` as soon as Numba's first import finishes, so that a process that never
    imports Numba (a GPU run of MaBoSS) does not import it for the listener (0.2-0.5 s)."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> Any:
        if name != "numba":
            return None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)  # what the other finders give
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module: Any) -> None:
            run(module)
            watch_numba()

        loader.exec_module = exec_module  # this import's loader (Numba's own module object is unchanged)
        return spec


if "numba" in sys.modules:
    watch_numba()
elif not any(isinstance(f, _AfterNumbaImport) for f in sys.meta_path):
    sys.meta_path.insert(0, _AfterNumbaImport())
