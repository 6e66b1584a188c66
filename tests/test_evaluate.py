"""Evaluation: a clean corpus passes; injected defects block the run and are named."""

from __future__ import annotations

import contextlib
import io
import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memlineage import Memory
from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.render import over_budget_line
from memlineage.interfaces.cli import main
from memlineage.operations import evaluate as evaluation
from memlineage.tokens import default_tokenizer

CORPUS = [
    {"id": "e-1", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
    {
        "id": "e-2",
        "subject": "user-7",
        "text": "The ORION budget is at most 4,500 EUR per month.",
        "facts": [{"key": "budget/orion", "value": 4500, "unit": "EUR", "polarity": True}],
    },
    {"id": "e-3", "subject": "user-7", "text": "My office is in Madrid."},
    {"id": "e-4", "subject": "user-7", "text": "My office is in Seville."},
    {"id": "e-5", "subject": "user-8", "text": "I am allergic to peanuts.", "kind": "constraint"},
]


@pytest.fixture
def corpus(memory: Memory) -> Memory:
    memory.add(CORPUS)
    memory.conflict("e-3", "e-4", key="office")
    return memory


class Inventing(DeterministicGenerator):
    """Adds a claim whose value no cited event contains."""

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        out = super().generate(request)
        out["claims"].append(
            {
                "key": "budget/invented",
                "value": 9999,
                "unit": "EUR",
                "polarity": True,
                "kind": "money",
                "derivedFrom": [request.events[0].id],
                "text": "9,999 EUR",
            }
        )
        return out


class Flipping(DeterministicGenerator):
    """States the budget fact with the opposite polarity."""

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        out = super().generate(request)
        for claim in out["claims"]:
            if claim["key"].endswith("/budget/orion"):
                claim["polarity"] = not claim["polarity"]
        return out


def test_a_clean_corpus_passes_with_its_metrics(corpus: Memory) -> None:
    report = corpus.eval()
    metrics = report.overall()
    assert report.passed, [f.to_json() for f in report.blocking]
    assert metrics["erroneous_new_fact_rate"] == 0.0
    assert metrics["stale_visible"] == 0.0
    assert metrics["key_fact_recall"] == 1.0  # the explicit budget fact is carried
    assert metrics["conflict_retention_rate"] == 1.0  # Madrid and Seville both contested
    assert corpus.artifacts() == []  # evaluation never writes an artifact
    assert corpus.recall("user-7").mode == "raw"  # and never switches an alias
    assert [r["run_id"] for r in corpus.eval_runs()] == [report.run_id]


def test_an_invented_fact_blocks_and_is_named(corpus: Memory) -> None:
    report = corpus.eval(generator=Inventing())
    assert not report.passed
    named = [f for f in report.blocking if f.metric == "erroneous_new_fact_rate"]
    assert {f.subject for f in named} == {"user-7", "user-8"}
    assert any("9999" in f.detail and f.item == "claim budget/invented" for f in named)


def test_a_flipped_polarity_blocks_and_is_named(corpus: Memory) -> None:
    report = corpus.eval(["user-7"], generator=Flipping())
    assert not report.passed
    assert any(
        f.subject == "user-7" and f.item == "e-2" and "polarity" in f.detail
        for f in report.blocking
    )


class Padding(DeterministicGenerator):
    """Shows every event and repeats it: a summary larger than its events."""

    def generate(self, request: GenerationRequest) -> dict[str, Any]:
        out = super().generate(request)
        out["statements"] = out["statements"] * 3
        return out


def test_a_summary_larger_than_its_many_events_blocks(memory: Memory) -> None:
    short = [{"id": f"s-{n}", "subject": "user-7", "text": f"Note {n}."} for n in range(60)]
    few = [{"id": f"f-{n}", "subject": "user-8", "text": f"Note {n}."} for n in range(10)]
    memory.add(short + few)
    report = evaluation.run_eval(memory.store, memory.tenant, generator=Padding(), budget=None)
    named = [f for f in report.blocking if f.metric == "token_reduction"]
    assert [f.subject for f in named] == ["user-7"]  # ten events: measured, not blocking
    assert "larger than its 60 events" in named[0].detail and not report.passed
    by_subject = {r.subject: r.metrics()["token_reduction"] for r in report.subjects}
    assert by_subject["user-7"] is not None and by_subject["user-7"] < 0
    assert by_subject["user-8"] is not None and by_subject["user-8"] < 0


def test_token_reduction_counts_what_the_agent_reads(memory: Memory) -> None:
    memory.add([{"id": "c-1", "subject": "user-7", "text": "Never deploy on Fridays.",
                 "at": "2026-01-05T09:00:00Z"}])  # fmt: skip
    [result] = evaluation.run_eval(memory.store, memory.tenant, budget=1).subjects
    # the over-budget line is part of what the agent reads, so it is counted
    read = "Constraints:\n2026-01-05:\n- Never deploy on Fridays.\n" + over_budget_line(1)
    assert result.summary_tokens == default_tokenizer().count(read)
    assert result.findings == []  # one event: larger, but not a failure of the budget


def test_a_visible_stale_artifact_blocks(corpus: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    assert corpus.consolidate("user-8").switched
    corpus.revoke("e-5")
    assert corpus.eval().passed  # the real recall path hides the stale artifact
    # A recall path that forgot I4 (a test double) would serve it: eval must see that.
    monkeypatch.setattr(evaluation, "why_not_summary", lambda head: None)
    report = corpus.eval()
    assert not report.passed
    stale = [f for f in report.blocking if f.metric == "stale_visible"]
    assert [f.subject for f in stale] == ["user-8"]
    assert "e-5" in stale[0].detail


def test_gold_file_lowers_recall_and_names_the_fact(corpus: Memory, tmp_path: Path) -> None:
    gold = evaluation.parse_gold(
        [
            json.dumps({"event": "e-2", "value": 4500, "unit": "EUR"}),
            json.dumps({"event": "e-1", "value": 42}),
        ]
    )
    report = corpus.eval(gold=gold)
    assert report.overall()["key_fact_recall"] == pytest.approx(2 / 3)
    missing = [f for r in report.subjects for f in r.findings if f.metric == "key_fact_recall"]
    assert [(f.subject, f.item) for f in missing] == [("user-7", "e-1")]
    with pytest.raises(evaluation.BadInput, match="line 2"):
        evaluation.parse_gold(['{"event": "e-1", "value": 1}', '{"event": "e-1"}'])


def test_cli_eval_exit_codes_and_html(db_url: str, tmp_path: Path) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text("\n".join(json.dumps(e) for e in CORPUS) + "\n")
    base = ["--db", db_url, "--tenant", "acme"]
    assert main(["add", str(events), *base]) == 0
    out = io.StringIO()
    html = tmp_path / "report.html"
    assert main(["eval", *base, "--json", "--html", str(html)], stdout=out) == 0
    doc = json.loads(out.getvalue())
    assert doc["passed"] is True and set(doc["metrics"]) == set(evaluation.METRICS)
    page = html.read_text()
    assert page.count("<svg") == len(evaluation.METRICS) and "http" not in page.split("<body>")[1]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no Chromium on this machine")
def test_html_report_shows_its_charts_in_a_browser(corpus: Memory, tmp_path: Path) -> None:
    corpus.eval()
    corpus.eval(generator=Inventing())
    with report_in_chromium(corpus.eval_runs(), tmp_path) as page:
        charts = page.locator("figure svg")
        assert charts.count() == len(evaluation.METRICS)
        for index in range(charts.count()):
            assert charts.nth(index).is_visible()
            assert charts.nth(index).bounding_box()["width"] > 100  # type: ignore[index]
        assert page.locator("circle").count() == 2 * len(evaluation.METRICS)
        assert "BLOCKED" in page.inner_text("body")
        page.screenshot(path=str(tmp_path / "report.png"))


def _runs(count: int) -> list[dict[str, Any]]:
    """Stored runs as ``eval_runs`` returns them, with a trend in every metric."""
    runs = []
    for i in range(count):
        metrics = {name: round(0.5 + 0.4 * i / count, 3) for name in evaluation.METRICS}
        metrics["stale_visible"] = 0.0
        report = {"metrics": metrics, "blocking": [], "subjects": []}
        runs.append({"run_id": f"run-{i + 1}", "passed": i != 3, "report": report})
    return runs


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no Chromium on this machine")
@pytest.mark.parametrize("count", [2, 12, 60])
def test_report_charts_have_labelled_axes_and_no_overlapping_labels(
    tmp_path: Path, count: int
) -> None:
    boxes_of = """figure => [...figure.querySelectorAll('svg text')].map(t => {
        const r = t.getBoundingClientRect();
        return {text: t.textContent, x: r.x, y: r.y, w: r.width, h: r.height};
    })"""
    with report_in_chromium(_runs(count), tmp_path) as page:
        figures = page.locator("figure")
        assert figures.count() == len(evaluation.METRICS)
        for index in range(figures.count()):
            figure = figures.nth(index)
            titles = figure.locator(".axis-title").all_text_contents()
            assert titles[0] == "run (oldest to newest)" and titles[1], titles
            labels = figure.locator("text.tick").all_text_contents()
            assert "#1" in labels  # runs numbered oldest first
            points = figure.locator("polyline").get_attribute("points") or ""
            assert len(points.split()) == count  # one point per run: the trend
            boxes = figure.evaluate(boxes_of)
            for a, b in itertools.combinations(boxes, 2):
                apart = (
                    a["x"] + a["w"] <= b["x"]
                    or b["x"] + b["w"] <= a["x"]
                    or a["y"] + a["h"] <= b["y"]
                    or b["y"] + b["h"] <= a["y"]
                )
                assert apart, (a, b)
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)


@contextlib.contextmanager
def report_in_chromium(runs: list[dict[str, Any]], tmp_path: Path) -> Iterator[Any]:
    """The HTML report of ``runs`` opened in a real headless Chromium: its page."""
    from playwright.sync_api import sync_playwright

    from memlineage.operations.reports import render_html

    page_file = tmp_path / "report.html"
    page_file.write_text(render_html(runs))
    with sync_playwright() as play:
        browser = play.chromium.launch(executable_path=shutil.which("chromium"))
        page = browser.new_page()
        page.goto(page_file.as_uri())
        yield page
        browser.close()
