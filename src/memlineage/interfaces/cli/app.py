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
from memlineage.errors import BadInput, MemlineageError, NotFound
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


def global_options(command: F, *, json_option: bool = True) -> F:
    """``--db``, ``--tenant`` and ``--json``, accepted before or after the subcommand.

    ``json_option=False`` leaves ``--json`` out, for a command that prints no
    document (``serve``, ``mcp``)."""
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
    if not json_option:
        options = options[:2]
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


# ``--help`` lists the commands by topic, in this order; a command not named here is
# listed under "Other commands".
TOPICS: dict[str, tuple[str, ...]] = {
    "Events (the raw layer)": (
        "add",
        "add-messages",
        "events",
        "extract",
        "revoke",
        "trust",
        "erase",
    ),
    "Conflicts and policies": ("conflict", "resolve", "dismiss", "detect", "policy"),
    "Summaries and recall": ("consolidate", "recall", "artifacts", "embed"),
    "Lineage": ("lineage", "why", "audit"),
    "Jobs and workers": ("worker", "jobs", "sweep", "optimize"),
    "Evaluation and release": ("verify", "eval", "release", "review"),
    "Serving": ("serve", "mcp", "keys"),
    "Getting started": ("demo",),
}


class RootGroup(click.Group):
    """Lists commands in the order they were added, and ``--help`` groups them by topic."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        listed = [
            (name, cmd)
            for name in self.list_commands(ctx)
            if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden
        ]
        if not listed:
            return
        limit = formatter.width - 6 - max(len(name) for name, _ in listed)
        by_topic: dict[str, list[tuple[str, str]]] = {}
        topic_of = {name: topic for topic, names in TOPICS.items() for name in names}
        for name, cmd in listed:
            topic = topic_of.get(name, "Other commands")
            by_topic.setdefault(topic, []).append((name, cmd.get_short_help_str(limit)))
        for topic in [*TOPICS, "Other commands"]:
            rows = sorted(by_topic.get(topic, []), key=lambda row: _rank(topic, row[0]))
            if rows:
                with formatter.section(topic):
                    formatter.write_dl(rows)


def _rank(topic: str, name: str) -> int:
    names = TOPICS.get(topic, ())
    return names.index(name) if name in names else len(names)


@click.group(
    cls=RootGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="Example: memlineage --db memory.db add events.jsonl && memlineage recall user-7",
)
@global_options
@click.version_option(package_name="memlineage")
def root() -> None:
    """Memory consolidation for LLM agents, with lineage and a fidelity gate."""


def command(
    name: str, example: str, *, json_option: bool = True, **kwargs: Any
) -> Callable[[Callable[..., Report]], Any]:
    """Register a reporting command with the global options and an example in its help."""

    def register(func: Callable[..., Report]) -> Any:
        wrapped = global_options(reporting(func), json_option=json_option)
        return root.command(name, epilog=f"Example: {example}", **kwargs)(wrapped)

    return register


def main(argv: Sequence[str] | None = None, stdout: TextIO | None = None) -> int:
    """Run the command line; returns the exit code instead of raising SystemExit."""
    args = list(argv) if argv is not None else sys.argv[1:]
    conf = Settings(out=stdout)
    # A usage error can stop parsing before the --json callback ran: the word itself counts.
    as_json = "--json" in args[: args.index("--")] if "--" in args else "--json" in args
    try:
        # make_context + invoke rather than root.main: main() itself prints a blank
        # line on Ctrl-C before turning it into click.Abort.
        with root.make_context("memlineage", args, obj=conf) as ctx:
            result = root.invoke(ctx)
    except click.exceptions.Exit as exc:
        return int(exc.exit_code)
    except click.ClickException as exc:
        error = Failure(int(exc.exit_code), type(exc).__name__, exc.format_message())
        return error.tell(conf, as_json)
    except (click.Abort, KeyboardInterrupt):
        return Failure(130, "Interrupted", "interrupted").tell(conf, as_json)
    except MemlineageError as exc:
        error = Failure(int(exc.exit_code), type(exc).__name__, printable(_explained(exc, conf)))
        return error.tell(conf, as_json)
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


@dataclass(frozen=True)
class Failure:
    """An error as the contract shows it: one line on stderr and, with ``--json``, one
    document on stdout in the HTTP service's error shape."""

    code: int
    type: str
    message: str

    def tell(self, conf: Settings, as_json: bool) -> int:
        print(f"memlineage: {self.message}", file=sys.stderr)
        if conf.json or as_json:
            doc = {"error": {"code": self.code, "type": self.type, "message": self.message}}
            conf.stdout.write(json.dumps(doc, ensure_ascii=False) + "\n")
        return self.code


def _explained(exc: MemlineageError, conf: Settings) -> str:
    """A subject not found in a tenant that has no events at all: say so, since the usual
    cause is a wrong ``--tenant`` (or ``--db``) rather than a wrong subject."""
    if not (isinstance(exc, NotFound) and exc.field == "subject"):
        return str(exc)
    try:
        with Memory(conf.db, tenant=conf.tenant, create=False) as mem:
            empty = not mem.subjects()
    except Exception:  # no store to look in: an explanation must never hide the error
        return str(exc)
    if not empty:
        return str(exc)
    return str(
        BadInput(
            f"tenant {conf.tenant!r} has no events, so no subject either; check --tenant and --db",
            field="tenant",
        )
    )
