"""The root of the ``memlineage`` command line: global options, output, errors.

Every command module registers its commands on :data:`root`. A command returns
a :class:`Report`; this module prints it (one JSON document with ``--json``,
readable text otherwise) and maps errors to the contract's exit codes: 0
success, 1 a check failed, 2 bad input or usage (one line on stderr), 130
interrupted, 141 stdout closed by its reader.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TextIO, TypeVar

import click

from memlineage.api import Memory, check_tenant
from memlineage.errors import BadInput, MemlineageError
from memlineage.store import default_url
from memlineage.strings import printable


@dataclass
class Settings:
    """The global options, whichever side of the subcommand they were given on."""

    db: str | None = None
    tenant: str = "default"
    json: bool = False
    out: TextIO | None = None

    @property
    def stdout(self) -> TextIO:
        return self.out or sys.stdout


@dataclass(frozen=True)
class Report:
    """What a command prints: ``doc`` with ``--json``, ``text`` otherwise; and its exit code."""

    doc: Any
    text: str
    code: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def settings() -> Settings:
    return click.get_current_context().ensure_object(Settings)


def _store_setting(
    name: str, check: Callable[[Any], Any] | None = None
) -> Callable[[click.Context, click.Parameter, Any], None]:
    def store(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        if value is not None and value is not False:
            if check is not None:
                try:
                    check(value)
                except BadInput as exc:
                    raise click.BadParameter(exc.reason) from None
            setattr(ctx.ensure_object(Settings), name, value)

    return store


F = TypeVar("F", bound=Callable[..., Any])

# The contract gives stderr one line per error. Without a handler, Python's last-resort
# handler would print psycopg's warnings there too (after Ctrl-C: "error ignored in
# rollback", the connection being mid-command); the error's own line says what happened.
logging.getLogger("psycopg").addHandler(logging.NullHandler())


def global_options(command: F) -> F:
    """``--db``, ``--tenant`` and ``--json``, accepted before or after the subcommand."""
    options = [
        click.option(
            "--db",
            default=None,
            expose_value=False,
            callback=_store_setting("db"),
            help=f"SQLite path or postgresql:// URL (default: $MEMLINEAGE_DB or {default_url()})",
        ),
        click.option(
            "--tenant",
            default=None,
            expose_value=False,
            callback=_store_setting("tenant", check_tenant),
            help="isolation boundary (default: default)",
        ),
        click.option(
            "--json",
            "json_",
            is_flag=True,
            default=False,
            expose_value=False,
            callback=_store_setting("json"),
            help="print exactly one JSON document on stdout",
        ),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def reporting(command: Callable[..., Report]) -> Callable[..., int]:
    """Print the command's report in the form the global options ask for."""

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> int:
        report = command(*args, **kwargs)
        conf = settings()
        if conf.json:
            conf.stdout.write(json.dumps(report.doc, ensure_ascii=False) + "\n")
        elif report.text:  # stored text may carry escape sequences: never raw to a terminal
            conf.stdout.write(printable(report.text) + "\n")
        return report.code

    return run


def memory(**kwargs: Any) -> Memory:
    """A ``Memory`` over the store and tenant the global options name."""
    conf = settings()
    return Memory(conf.db, tenant=conf.tenant, **kwargs)


def progress_enabled() -> bool:
    """Progress bars only for a person watching: stderr is a terminal and no ``--json``."""
    return sys.stderr.isatty() and not settings().json


class RootGroup(click.Group):
    """Lists commands in the order they were added, as the contract table does."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)


@click.group(
    cls=RootGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Example: memlineage --db memory.db add events.jsonl && memlineage recall user-7",
)
@global_options
@click.version_option(package_name="memlineage")
def root() -> None:
    """Memory consolidation for LLM agents, with lineage and a fidelity gate."""


def command(name: str, example: str, **kwargs: Any) -> Callable[[Callable[..., Report]], Any]:
    """Register a reporting command with the global options and an example in its help."""

    def register(func: Callable[..., Report]) -> Any:
        wrapped = global_options(reporting(func))
        return root.command(name, epilog=f"Example: {example}", **kwargs)(wrapped)

    return register


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run the command line; returns the exit code instead of raising SystemExit."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        # make_context + invoke rather than root.main: main() itself prints a blank
        # line on Ctrl-C before turning it into click.Abort.
        with root.make_context("memlineage", args, obj=Settings(out=stdout)) as ctx:
            result = root.invoke(ctx)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        print(f"memlineage: {exc.format_message()}", file=sys.stderr)
        return int(exc.exit_code)
    except (click.Abort, KeyboardInterrupt):
        print("memlineage: interrupted", file=sys.stderr)
        return 130
    except MemlineageError as exc:
        print(f"memlineage: {printable(str(exc))}", file=sys.stderr)
        return int(exc.exit_code)
    except BrokenPipeError:
        # The reader of stdout went away (``| head``): stop quietly, as Unix tools do.
        if stdout is None:
            _silence_stdout()
        return 141  # 128 + SIGPIPE, what a shell reports for a tool stopped this way
    return result if isinstance(result, int) else 0


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the flush at exit does not raise on the closed pipe."""
    try:
        target = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a real file: nothing to flush at exit
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, target)
    os.close(devnull)
