"""When a published summary may be read (I4): the alias, its artifact and the clock agree. Pure."""

from __future__ import annotations

from memlineage.model import Alias, ArtifactStatus, Clock
from memlineage.store.protocol import Head


def why_not_summary(head: Head | None, *, output: bool = True) -> str | None:
    """None when the alias may serve recall (I4); otherwise the reason it may not.
    ``output=False``: the head was read without the artifact's output (``job_head``),
    whose presence is then not asked (a published artifact always has one)."""
    if head is None:
        return "no events for this subject"
    artifact = head.artifact
    status = artifact.status if artifact is not None else None
    whole = artifact is not None and (not output or artifact.output is not None)
    return why_not_published(head.clock, head.alias, status, whole=whole)


def why_not_published(
    clock: Clock, alias: Alias, status: str | None, *, whole: bool = True
) -> str | None:
    """``why_not_summary`` from the alias's artifact's status alone (None: there is no
    artifact); ``whole`` False: the artifact was found without its output."""
    if not alias.artifact_id or status is None:
        return "no summary published yet"
    if alias.bypassed:
        return "summary bypassed"
    if alias.source_epoch != clock.epoch:
        return f"summary epoch {alias.source_epoch} != source epoch {clock.epoch}"
    if status != ArtifactStatus.PUBLISHED or not whole:
        return f"artifact {alias.artifact_id} is {status}"
    return None
