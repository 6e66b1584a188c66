"""Per-tenant policies as versioned data: the temporal policy and the trust policy. Pure.

- The **temporal policy** decides what happens to a contradiction the raw layer
  detects: ``keep`` leaves it unresolved (summaries show both sides as
  contested), ``latest-wins`` resolves it for the event with the newer ``at``.
  One rule per event kind; the default is ``latest-wins`` for preferences and
  ``keep`` for everything else.
- The **trust policy** decides which trust levels are admitted and which taint
  labels quarantine an event (``select.TrustPolicy``).

A change is a new version (never an edit of an old one); the store keeps every
version, and a resolution or a subject's validity names the version it used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memlineage.errors import BadInput
from memlineage.model import EVENT_KINDS, TRUST_LEVELS, Operation, OpKind
from memlineage.raw.validity import DEFAULT_POLICY, TrustPolicy, policy_from_op

TEMPORAL = "temporal"
TRUST = "trust"
POLICY_NAMES = (TEMPORAL, TRUST)

KEEP = "keep"
LATEST_WINS = "latest-wins"
TEMPORAL_RULES = (KEEP, LATEST_WINS)
DEFAULT_KIND = "*"  # the rule for every kind without one of its own


@dataclass(frozen=True)
class TemporalPolicy:
    """What a detected contradiction of each kind becomes: kept unresolved or latest-wins."""

    version: int = 1
    rules: Mapping[str, str] = field(default_factory=lambda: {"preference": LATEST_WINS})
    default: str = KEEP

    def rule_for(self, kind: str) -> str:
        return self.rules.get(kind, self.default)

    def rule_name(self, kind: str) -> str:
        """How a resolution names its rule: the rule, the kind and the policy version."""
        return f"{self.rule_for(kind)} for {kind} (temporal policy v{self.version})"

    def to_json(self) -> dict[str, Any]:
        return {"rules": dict(sorted(self.rules.items())), "default": self.default}

    @staticmethod
    def from_json(version: int, body: Mapping[str, Any]) -> TemporalPolicy:
        return TemporalPolicy(version, dict(body["rules"]), str(body["default"]))

    def changed(self, assignments: Iterable[str]) -> TemporalPolicy:
        """A new version with ``KIND=RULE`` assignments applied (``*=RULE``: the default)."""
        rules = dict(self.rules)
        default = self.default
        for assignment in assignments:
            kind, rule = parse_assignment(assignment)
            if kind == DEFAULT_KIND:
                default = rule
            else:
                rules[kind] = rule
        return TemporalPolicy(self.version + 1, rules, default)


DEFAULT_TEMPORAL = TemporalPolicy()


def parse_assignment(text: str) -> tuple[str, str]:
    """``preference=latest-wins`` -> (kind, rule); a clear error names what is wrong."""
    kind, sep, rule = text.partition("=")
    kind, rule = kind.strip(), rule.strip()
    if not sep:
        raise BadInput(f"expected KIND=RULE, got {text!r}", field="rule")
    if kind != DEFAULT_KIND and kind not in EVENT_KINDS:
        raise BadInput(
            f"unknown kind {kind!r}; one of {', '.join(EVENT_KINDS)} or * (the default)",
            field="rule",
        )
    if rule not in TEMPORAL_RULES:
        raise BadInput(f"unknown rule {rule!r}; one of {', '.join(TEMPORAL_RULES)}", field="rule")
    return kind, rule


@dataclass(frozen=True)
class VersionedTrust:
    """A version of the tenant's trust policy. Version 1 is the built-in default."""

    version: int = 1
    policy: TrustPolicy = DEFAULT_POLICY

    def to_json(self) -> dict[str, Any]:
        blocked = self.policy.blocked_taints
        return {
            "admittedTrust": sorted(self.policy.admitted_trust),
            "blockedTaints": None if blocked is None else sorted(blocked),
        }

    @staticmethod
    def from_json(version: int, body: Mapping[str, Any]) -> VersionedTrust:
        blocked = body.get("blockedTaints")
        return VersionedTrust(
            version,
            TrustPolicy(
                blocked_taints=None if blocked is None else frozenset(blocked),
                admitted_trust=frozenset(body["admittedTrust"]),
            ),
        )

    def operation_fields(self) -> dict[str, Any]:
        """How a ``policy`` operation carries it, so the pure fold (select) can apply it."""
        blocked = self.policy.blocked_taints
        return {
            "target": f"trust-policy:v{self.version}",
            "trust": ",".join(sorted(self.policy.admitted_trust)),
            "taint": None if blocked is None else sorted(blocked),
        }


DEFAULT_TRUST = VersionedTrust()


def trust_policy(
    version: int, admit: Sequence[str] | None, block: Sequence[str] | None, block_any: bool
) -> VersionedTrust:
    """A trust policy from its parts: admitted levels, blocked labels (or any label)."""
    admitted = frozenset(admit) if admit else DEFAULT_POLICY.admitted_trust
    unknown = sorted(admitted - set(TRUST_LEVELS))
    if unknown:
        raise BadInput(
            f"unknown trust level {unknown[0]!r}; one of {', '.join(TRUST_LEVELS)}",
            field="admit",
        )
    if block_any and block:
        raise BadInput("give either blocked labels or --block-any-taint", field="block")
    blocked = None if block_any or block is None else frozenset(block)
    return VersionedTrust(version, TrustPolicy(blocked_taints=blocked, admitted_trust=admitted))


def versioned_json(policy: TemporalPolicy | VersionedTrust) -> dict[str, Any]:
    """A policy as the command line and the HTTP service show it: its version, then its body."""
    return {"version": policy.version, **policy.to_json()}


def trust_from_operation(op: Operation) -> VersionedTrust:
    """The version a subject's ``policy`` operation applied."""
    assert op.kind is OpKind.POLICY
    version = int(op.target.rsplit(":v", 1)[1])
    return VersionedTrust(version, policy_from_op(op))


def describe_trust(trust: VersionedTrust) -> str:
    blocked = trust.policy.blocked_taints
    labels = "any taint label" if blocked is None else ", ".join(sorted(blocked)) or "no label"
    return (
        f"trust v{trust.version}: admits {', '.join(sorted(trust.policy.admitted_trust))};"
        f" quarantines {labels}"
    )


def describe_temporal(temporal: TemporalPolicy) -> str:
    rules = ", ".join(f"{kind}={rule}" for kind, rule in sorted(temporal.rules.items()))
    return f"temporal v{temporal.version}: {rules or 'no per-kind rule'}; others={temporal.default}"
