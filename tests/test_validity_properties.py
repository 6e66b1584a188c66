"""Property (hypothesis, both backends): after every step of random sequences of appends,
revokes, replacements, policy upgrades, erasures and consolidations, no stale artifact is
visible and no published artifact cites an invalid event."""

from __future__ import annotations

import uuid

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from memlineage import Memory
from memlineage.model import ArtifactStatus
from memlineage.raw.validity import source_state

TEXTS = [
    "I love jazz.",
    "I hate jazz.",
    "The budget is 4,500 EUR.",
    "The budget is 5,000 EUR.",
    "Never deploy on Fridays.",
    "Ship ORION-12 by 2026-12-18.",
    "We met at the harbour.",
]
LABELS = ["web", "rumour"]


def machine(url: str) -> type[RuleBasedStateMachine]:
    class Validity(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            self.memory = Memory(url, tenant=f"t-{uuid.uuid4().hex[:10]}")
            self.ids: list[str] = []
            self.count = 0

        def teardown(self) -> None:
            self.memory.close()

        def _new_id(self) -> str:
            self.count += 1
            return f"e-{self.count}"

        @rule(text=st.sampled_from(TEXTS), taint=st.sampled_from([[], ["web"], ["rumour"]]),
              month=st.integers(1, 12))  # fmt: skip
        def append(self, text: str, taint: list[str], month: int) -> None:
            event_id = self._new_id()
            self.memory.add([{"id": event_id, "subject": "user-7", "text": text,
                              "taint": taint, "at": f"2026-{month:02d}-01T00:00:00Z"}])  # fmt: skip
            self.ids.append(event_id)

        @rule(data=st.data())
        def revoke(self, data: st.DataObject) -> None:
            if self.ids:
                self.memory.revoke(data.draw(st.sampled_from(self.ids)))

        @rule(data=st.data(), text=st.sampled_from(TEXTS))
        def replace(self, data: st.DataObject, text: str) -> None:
            if self.ids:
                old = data.draw(st.sampled_from(self.ids))
                event_id = self._new_id()
                self.memory.add([{"id": event_id, "subject": "user-7", "text": text,
                                  "supersedes": old}])  # fmt: skip
                self.ids.append(event_id)

        @rule(blocked=st.lists(st.sampled_from(LABELS), unique=True))
        def upgrade_policy(self, blocked: list[str]) -> None:
            self.memory.set_trust_policy(block=blocked, batch=1)

        @rule(data=st.data())
        def erase(self, data: st.DataObject) -> None:
            if self.ids:
                self.memory.erase(data.draw(st.sampled_from(self.ids)), reason="request")

        @rule()
        def consolidate(self) -> None:
            if self.ids:
                self.memory.consolidate("user-7")

        @invariant()
        def nothing_stale_is_visible_and_nothing_published_cites_an_invalid_event(
            self,
        ) -> None:
            if not self.ids:
                return
            recalled = self.memory.recall("user-7")
            history = self.memory.store.subject_history(  # type: ignore[attr-defined]
                self.memory.tenant, "user-7"
            )
            state = source_state(history.events, history.operations)
            artifacts = {a.id: a for a in history.artifacts}
            if recalled.mode == "summary":
                assert recalled.artifact_id is not None
                assert artifacts[recalled.artifact_id].status is ArtifactStatus.PUBLISHED
            for artifact in artifacts.values():
                if artifact.status is ArtifactStatus.PUBLISHED:
                    cited = set(artifact.manifest.input_ids)
                    assert not cited & set(state.invalid), (artifact.id, state.invalid)
            visible = {e.id for e in recalled.events} | {e.id for e in recalled.tail}
            assert not visible & set(state.invalid)

    return Validity


def test_validity_state_machine(db_url: str) -> None:
    run_state_machine_as_test(
        machine(db_url),
        settings=settings(
            max_examples=20,
            stateful_step_count=10,
            deadline=None,
            suppress_health_check=[HealthCheck.too_slow],
        ),
    )
