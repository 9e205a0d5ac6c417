"""The one exception type for problems a user can fix.

Raise :class:`SiptError` with a single line that names the problem and the fix; the CLI prints it
as ``sipt-lab: error: <message>`` and exits with status 2, never with a traceback.
"""


class SiptError(Exception):
    """A user-facing problem (bad input, impossible request). The message is one line."""
