"""The one exception type for problems a user can fix.

Raise :class:`SiptError` with a single line that names the problem and the fix; the CLI prints it
as ``sipt-lab: error: <message>`` and exits with status 2, never with a traceback. A config whose
field cannot run raises :class:`ConfigError`, which names the field (``TrainConfig.steps``); the
CLI shows the flag that sets that field instead. Library messages never name flags: a message that
points at another field names it as ``Class.field`` too, and the CLI translates every such name
(:func:`with_flags`), in a :class:`SiptError` of any kind.
"""

import re

#: A ``Class.field`` name in a message (``TrainConfig.precision``).
FIELD_NAME = re.compile(r"\b[A-Za-z_]\w*\.[A-Za-z_]\w*\b")


def with_flags(message: str, flags: dict[str, str]) -> str:
    """``message`` with every ``Class.field`` it names that ``flags`` (field -> CLI flag) holds
    replaced by that flag; other names stay as they are."""
    return FIELD_NAME.sub(lambda found: flags.get(found[0], found[0]), message)


class SiptError(Exception):
    """A user-facing problem (bad input, impossible request). The message is one line."""


class ConfigError(SiptError):
    """A config field whose value cannot run.

    Attributes:
        field: ``"<Config class>.<field>"``, e.g. ``"TrainConfig.batch_size"``.
        problem: the rest of the message, e.g. ``"must be >= 1, got 0"``.
    """

    def __init__(self, field: str, problem: str) -> None:
        super().__init__(f"{field} {problem}")
        self.field = field
        self.problem = problem

    def for_flags(self, flags: dict[str, str]) -> str:
        """The message with the field, and any other ``Class.field`` the problem names, replaced by
        its entry in ``flags`` (field -> CLI flag), if any."""
        return f"{flags.get(self.field, self.field)} {with_flags(self.problem, flags)}"
