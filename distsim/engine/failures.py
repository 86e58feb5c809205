"""Errors that a shard task must not retry: they would recur on any worker (bad input, a model that
cannot be evaluated). A Dask task that raises one returns it as a :class:`TaskError` value instead,
so Dask neither retries it nor logs a worker traceback; the client raises the same error once.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field
from typing import Any

from ..errors import DistsimError


class NotRetryable(Exception):
    """Base of errors that are a property of the input, not of the worker that saw them."""


# the error classes a shard task never retries
DETERMINISTIC: tuple[type[BaseException], ...] = (DistsimError, ValueError, TypeError, KeyError, NotRetryable)


@dataclass(frozen=True)
class TaskError:
    """A deterministic error raised in a shard task, carried back as a value."""

    kind: type[BaseException]
    args: tuple
    state: dict = field(default_factory=dict)

    @classmethod
    def of(cls, err: BaseException) -> TaskError:
        out = cls(type(err), err.args, dict(vars(err)))
        try:
            pickle.dumps(out)
        except Exception:  # an unpicklable class or attribute: keep the message under the nearest base
            base = next((b for b in type(err).__mro__ if b in DETERMINISTIC), NotRetryable)
            out = cls(base, (str(err),))
        return out

    def error(self) -> BaseException:
        """The same exception (type, args, attributes), rebuilt without calling its ``__init__``."""
        err = self.kind.__new__(self.kind, *self.args)
        err.args = self.args
        err.__dict__.update(self.state)
        return err


def raise_task_errors(results: Any) -> None:
    """Raise the first :class:`TaskError` among ``(result, meta)`` pairs (in shard order)."""
    for result, _ in results:
        if isinstance(result, TaskError):
            raise result.error() from None
