"""Errors that end a command with one line on stderr and a fixed exit code."""

from importlib.util import find_spec


class RlgenError(Exception):
    """Bad input or environment: exit code 2, one line, nothing written; ``items`` are printed
    below it, one line each (a list the one line introduces, as the missing answers of rlgen new)."""

    exit_code = 2
    items: tuple[str, ...] = ()

    def __init__(self, message: str, items: tuple[str, ...] = ()):
        super().__init__(message)
        self.items = tuple(items)

    @property
    def headline(self) -> str:
        """The one line, without the list."""
        return super().__str__()

    def __str__(self) -> str:
        return "\n".join([self.headline, *(f"  {item}" for item in self.items)])


class ProblemsFound(RlgenError):
    """Validation found problems in a repository: exit code 1."""

    exit_code = 1


#: The exit code of a bug in rlgen (BSD's EX_SOFTWARE), distinct from every expected outcome.
INTERNAL_ERROR = 70


def require_extra(extra: str, what: str, *modules: str) -> None:
    """Stop ``what`` with one line naming the extra to install when a module of ``extra``
    (pyproject.toml's optional dependencies) is missing. Looked up, not imported: the check
    costs nothing when the extra is there."""
    missing = [m for m in modules if find_spec(m) is None]
    if missing:
        raise RlgenError(f"{what} needs {', '.join(missing)}, which rlgen installs only on request: "
                         f"pip install 'rlgen[{extra}]'")


#: The exit code of a bug in a plugin, distinct from a bug in rlgen: the report goes to its author.
PLUGIN_ERROR = 3


class PluginFailed(RlgenError):
    """A plugin's hook raised: one line naming the plugin and the hook, the traceback kept for
    the plugin's author (``details``)."""

    exit_code = PLUGIN_ERROR

    def __init__(self, plugin: str, hook: str, exc: BaseException):
        # Lazy, only when a plugin fails: traceback is 12 ms (median of 7).
        import traceback

        super().__init__(f"plugin '{plugin}' failed in {hook}(): {exc.__class__.__name__}: {exc} "
                         "(a bug in that plugin; report it to its author)")
        self.details = "".join(traceback.format_exception(exc))
