"""``eval``: rebuild sample summaries without switching; exit 1 on a blocking failure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from memlineage.interfaces.cli.app import Report, command, memory
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.interfaces.cli.raw import read_lines
from memlineage.operations import locomo
from memlineage.operations.evaluate import METRICS, EvalReport, parse_gold
from memlineage.operations.reports import render_html


def _evidence(path: str, view: locomo.View) -> dict[str, list[str]]:
    """LoCoMo: the evidence events of every QA item (categories 1–4), by subject."""
    return locomo.owed_evidence(locomo.load(path), view)


def _table(report: EvalReport) -> str:
    overall = report.overall()
    lines = [f"{'metric':<26} value"]
    lines += [f"{m:<26} {'n/a' if overall[m] is None else f'{overall[m]:.3f}'}" for m in METRICS]
    lines.append(f"subjects: {len(report.subjects)}; run {report.run_id or '(not stored)'}")
    for finding in report.blocking:
        lines.append(
            f"BLOCKING {finding.subject}: {finding.metric} {finding.item}: {finding.detail}"
        )
    lines.append("passed" if report.passed else "FAILED: blocking findings above")
    return "\n".join(lines)


@command("eval", "memlineage eval --sample 20 --gold gold.jsonl --html report.html")
@click.argument("subjects", nargs=-1)
@click.option("--sample", type=click.IntRange(1), help="rebuild only this many subjects")
@click.option("--gold", "gold_file", help="JSONL of {event, key?, value, unit?, polarity}")
@click.option("--locomo", "locomo_file", help="a LoCoMo file: its QA evidence must be cited")
@click.option(
    "--locomo-view",
    type=click.Choice(locomo.VIEWS),
    default="observations",
    show_default=True,
    help="which LoCoMo events the store holds: the observations or the dialogue turns",
)
@click.option("--html", "html_file", help="write a self-contained report with charts here")
@click.option("--no-save", is_flag=True, help="do not store this run")
def evaluate(
    subjects: Sequence[str],
    sample: int | None,
    gold_file: str | None,
    locomo_file: str | None,
    locomo_view: locomo.View,
    html_file: str | None,
    no_save: bool,
) -> Report:
    """Rebuild summaries from the raw layer (never switching) and report five metrics."""
    gold = parse_gold(read_lines(gold_file)) if gold_file else []
    evidence = _evidence(locomo_file, locomo_view) if locomo_file else None
    with memory() as mem, progress_bars() as progress:
        report = mem.eval(
            subjects or None,
            sample=sample,
            gold=gold,
            evidence=evidence,
            progress=progress,
            save=not no_save,
        )
        if html_file:
            Path(html_file).write_text(render_html(mem.eval_runs()), encoding="utf-8")
    return Report(report.to_json(), _table(report), 0 if report.passed else 1)
