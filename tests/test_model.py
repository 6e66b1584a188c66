"""Domain types: what the store writes, it reads back unchanged."""

from __future__ import annotations

from memlineage.consolidation.generators.base import GenerationRequest
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.consolidation.parse import parse_output
from memlineage.meaning.extract import extract_items
from memlineage.model import Alias, Event, Manifest, Output


def test_stored_output_reads_back_as_the_parser_read_it() -> None:
    events = (
        Event(id="m-1", subject="u", text="Never spend more than 4,500 EUR on ORION-12.", seq=1),
        Event(id="m-2", subject="u", text="The run is 5 km, not 5 mi.", seq=2),
    )
    items = tuple(extract_items(events))
    raw = DeterministicGenerator().generate(GenerationRequest("u", events, items, (), ()))
    parsed = parse_output(raw)
    assert Output.from_json(parsed.to_json()) == parsed


def test_manifest_round_trips_with_both_fences() -> None:
    manifest = Manifest(
        artifact_id="summary:user-7:000184-a1b2c3d4",
        subject="user-7",
        new_covers_through=184,
        input_epoch=27,
        expected_alias=Alias("summary:user-7:000090-0f0f0f0f", 26, 90),
        input_ids=("m-91", "m-103", "m-180"),
        input_root="sha256:9f5c",
        expected_conflicts=(),
        selector_version="v1",
        prompt_version="consolidate-v5",
        model_snapshot="approved-model-2026-06",
        derived_from_artifact="summary:user-7:000090-0f0f0f0f",
    )
    assert Manifest.from_json(manifest.to_json()) == manifest
