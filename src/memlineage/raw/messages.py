"""Chat messages (``[{role, content, name}]``, as agents hold them) turned into events. Pure.

Each message becomes one event of the subject: its ``content`` verbatim as the
text, its ``name`` (else its role) as the ``speaker``, and a trust level from
its role (user: ``user``, assistant: ``agent``, tool: ``tool``). System
messages are instructions, not memory: they are skipped (counted, never
stored).

The id is derived, so a retried call is a no-op (I2): ``msg-`` and 24 hex
digits of the SHA-256 of the subject, the thread, the message's position in
the list and its role, name, content and normalized ``at``. Two calls store the same
events exactly when they give the same subject and thread and, at each
position, a message with the same role, name, content and time. Sending a
conversation's whole history again each turn therefore appends only its new
messages. A thread is part of the ids only (not a project: a user's
preference stated in one conversation holds in the next).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memlineage.errors import BadInput
from memlineage.model import NewEvent
from memlineage.raw.ingest import MAX_ID_LENGTH, normalize_time, parse_event

#: role -> the trust level of the event it becomes
ROLE_TRUST: Mapping[str, str] = {"user": "user", "assistant": "agent", "tool": "tool"}
SKIPPED_ROLES = frozenset({"system", "developer"})
ROLES = (*ROLE_TRUST, *sorted(SKIPPED_ROLES))
MESSAGE_FIELDS = frozenset({"role", "content", "name", "at"})
ID_PREFIX = "msg-"


@dataclass(frozen=True)
class Messages:
    """The events a list of messages becomes, and how many messages were skipped."""

    events: list[NewEvent]
    skipped: int


def message_id(
    subject: str,
    thread: str | None,
    position: int,
    message: Mapping[str, Any],
    at: str | None,
) -> str:
    """The derived id of the message at ``position`` (see the module's docstring).

    ``at`` is the message's time (its own, else the call's), normalized (raw.ingest).
    """
    role, name, content = (message.get(k) for k in ("role", "name", "content"))
    parts = [subject, thread, position, role, name, content, at]
    digest = hashlib.sha256(json.dumps(parts, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    return ID_PREFIX + digest.hexdigest()[:24]


def parse_messages(
    subject: str,
    messages: Iterable[Any],
    *,
    thread: str | None = None,
    at: str | None = None,
    lines: Sequence[int] | None = None,
) -> Messages:
    """Validate every message, then build its event; BadInput names ``messages[i].field``.

    ``at`` (RFC 3339) is the time of every message without its own ``at``;
    neither given, the event has no ``at`` and the store's recording time
    stands for it (so a retry is still the same event). ``lines[i]`` is the
    line of message ``i`` in a JSONL file, for the error.
    """
    _check_call(subject, thread, at)
    if isinstance(messages, str | bytes | Mapping):  # a lone message or text: a common slip
        raise BadInput("must be a list of message objects", field="messages")
    events: list[NewEvent] = []
    skipped = 0
    for index, message in enumerate(messages):
        try:
            event = _event(subject, thread, at, index, message)
        except BadInput as exc:
            line = lines[index] if lines is not None else None
            raise BadInput(exc.reason, line=line, field=f"messages[{index}].{exc.field}") from None
        if event is None:
            skipped += 1
        else:
            events.append(event)
    return Messages(events, skipped)


def _check_call(subject: str, thread: str | None, at: str | None) -> None:
    for name, value in (("subject", subject), ("thread", thread)):
        if value is None and name == "thread":
            continue
        if not isinstance(value, str) or not value.strip() or value != value.strip():
            raise BadInput("must be a non-blank string without outer spaces", field=name)
        if len(value) > MAX_ID_LENGTH or "\x00" in value:
            raise BadInput(f"must be at most {MAX_ID_LENGTH} characters, no NUL", field=name)
    if at is not None:
        if not isinstance(at, str):
            raise BadInput("must be an RFC 3339 date-time string", field="at")
        normalize_time(at)


def _event(
    subject: str, thread: str | None, at: str | None, index: int, message: Any
) -> NewEvent | None:
    if not isinstance(message, Mapping):
        raise BadInput("must be an object with role and content", field="")
    unknown = sorted(set(message) - MESSAGE_FIELDS)
    if unknown:
        raise BadInput(f"unknown field (known: {', '.join(sorted(MESSAGE_FIELDS))})",
                       field=unknown[0])  # fmt: skip
    role = message.get("role")
    if role not in ROLES:
        raise BadInput(f"must be one of {', '.join(ROLES)}; got {role!r}", field="role")
    content = message.get("content")
    if not isinstance(content, str) or not content.strip():
        raise BadInput("must be a non-empty string", field="content")
    name = message.get("name")
    if name is not None and not isinstance(name, str):
        raise BadInput("must be a string", field="name")
    when = message.get("at", at)
    if when is not None:  # normalized: two spellings of one time are one id
        if not isinstance(when, str):
            raise BadInput("must be an RFC 3339 date-time string", field="at")
        when = normalize_time(when)
    event = {
        "id": message_id(subject, thread, index, message, when),
        "subject": subject,
        "text": content,
        "speaker": name or role,
        "trust": ROLE_TRUST.get(role, "agent"),
    }
    if when is not None:
        event["at"] = when
    try:
        parsed = parse_event(event)  # the same checks as any event (NUL, lengths, the time)
    except BadInput as exc:  # named as the message's field, not the event's
        field = {"text": "content", "speaker": "name"}.get(exc.field or "", exc.field)
        raise BadInput(exc.reason, field=field) from None
    return None if role in SKIPPED_ROLES else parsed
