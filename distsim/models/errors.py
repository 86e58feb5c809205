"""One error type for bad model input: it names the file, the line and what is wrong."""

from __future__ import annotations


class ModelError(ValueError):
    """A model file or model object is invalid.

    ``str(err)`` reads ``file:line: message`` (or ``file: message`` without a line), so a user can
    jump straight to the problem.
    """

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None, column: int | None = None):
        self.message = message
        self.file = file
        self.line = line
        self.column = column
        where = file or "<model>"
        if line is not None:
            where += f":{line}"
            if column is not None:
                where += f":{column}"
        super().__init__(f"{where}: {message}")
