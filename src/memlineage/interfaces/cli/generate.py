"""Generator commands: ``verify`` certifies a generator before rollout."""

from __future__ import annotations

from typing import Any

import click

from memlineage.consolidation.generators.config import GENERATORS, make_generator, resolve
from memlineage.consolidation.verify import Row
from memlineage.consolidation.verify import verify as certify
from memlineage.interfaces.cli.app import Report, command, progress_enabled, settings


def generator_options(func: Any) -> Any:
    """``--generator``, ``--base-url``, ``--model`` and ``--config``, shared with consolidate."""
    options = [
        click.option(
            "--generator",
            "generator_name",
            type=click.Choice(GENERATORS),
            default=None,
            help="deterministic or openai (default: the tenant's configuration, else the built-in)",
        ),
        click.option("--base-url", default=None, help="an OpenAI-compatible endpoint, e.g. .../v1"),
        click.option("--model", default=None, help="the model name to ask for"),
        click.option(
            "--config",
            "config_path",
            default=None,
            type=click.Path(dir_okay=False),
            help="generator configuration (default: $MEMLINEAGE_CONFIG or ./memlineage.toml)",
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return func


@command(
    "verify",
    "memlineage verify --generator openai --base-url http://127.0.0.1:8000/v1 --model qwen2.5",
)
@generator_options
def verify(
    generator_name: str | None, base_url: str | None, model: str | None, config_path: str | None
) -> Report:
    """Certify a generator on the gate's fixed samples and invariance checks (exit 1: not)."""
    chosen = resolve(
        settings().tenant,
        generator=generator_name,
        base_url=base_url,
        model=model,
        config=config_path,
    )
    result = certify(make_generator(chosen), progress=_progress if progress_enabled() else None)
    return Report(result.to_json(), result.table(), 0 if result.passed else 1)


def _progress(row: Row) -> None:
    """One line per row on stderr for a person watching: a model takes seconds per row."""
    click.echo(row.progress(), err=True)
