"""When a published summary may be read (I4): the alias, its artifact and the clock agree. Pure."""

from __future__ import annotations

from memlineage.model import ArtifactStatus
from memlineage.store.protocol import Head


def why_not_summary(head: Head | None, *, output: bool = True) -> str | None:
    """None when the alias may serve recall (I4); otherwise the reason it may not.
    ``output=False``: the head was read without the artifact's output (``job_head``),
    whose presence is then not asked (a published artifact always has one)."""
    if head is None:
        return "no events for this subject"
    alias, artifact = head.alias, head.artifact
    if not alias.artifact_id or artifact is None:
        return "no summary published yet"
    if alias.bypassed:
        return "summary bypassed"
    if alias.source_epoch != head.clock.epoch:
        return f"summary epoch {alias.source_epoch} != source epoch {head.clock.epoch}"
    if artifact.status is not ArtifactStatus.PUBLISHED or (output and artifact.output is None):
        return f"artifact {artifact.id} is {artifact.status}"
    return None
