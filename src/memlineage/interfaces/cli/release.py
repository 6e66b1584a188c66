"""Release commands: ``release mode|rollout|configs|fail`` and the shadow ``review`` queue."""

from __future__ import annotations

import getpass
import json
from collections.abc import Callable

import click

from memlineage.interfaces.cli.app import Report, global_options, memory, reporting, root, settings
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.operations.release import configs_json, rollout_config


def _group(name: str, example: str, help_: str) -> click.Group:
    group = click.Group(name, help=help_, epilog=f"Example: {example}")
    root.add_command(group)
    return group


release = _group("release", "memlineage release mode shadow --tenant acme", "Release per tenant.")
review = _group(
    "review",
    "memlineage review list --tenant acme",
    "The shadow review queue (release mode shadow).",
)


def subcommand(
    group: click.Group, name: str, example: str
) -> Callable[[Callable[..., Report]], click.Command]:
    """Register a reporting subcommand with the global options and an example."""

    def register(func: Callable[..., Report]) -> click.Command:
        wrapped = global_options(reporting(func))
        return group.command(name, epilog=f"Example: {example}")(wrapped)

    return register


@subcommand(release, "mode", "memlineage release mode shadow --tenant acme")
@click.argument("mode", required=False, type=click.Choice(["auto", "shadow"]))
def release_mode(mode: str | None) -> Report:
    """Show the tenant's release mode, or set it: auto switches at once, shadow waits for review."""
    with memory() as mem:
        current = mem.release_mode(mode)
    return Report(
        {"tenant": mem.tenant, "mode": current}, f"release mode of {mem.tenant}: {current}"
    )


@subcommand(
    release, "rollout", "memlineage release rollout --generator openai --model m --base-url URL"
)
@click.option("--generator", "name", type=click.Choice(["deterministic", "openai"]))
@click.option("--model", help="the model name (openai)")
@click.option("--base-url", help="the OpenAI-compatible endpoint (openai)")
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    help="roll out this file's settings for the tenant (without --generator:"
    " $MEMLINEAGE_CONFIG or ./memlineage.toml)",
)
def release_rollout(
    name: str | None, model: str | None, base_url: str | None, config_path: str | None
) -> Report:
    """Add a generator configuration version and make it active (the old one is the fallback).

    Without --generator, the configuration file's settings for the tenant (the API
    key is never stored); the flags override them."""
    with memory() as mem:
        config = rollout_config(mem.tenant, name, base_url, model, config_path)
        version = mem.rollout(config)
    return Report({"version": version, "config": config}, f"configuration {version} is active")


@subcommand(release, "configs", "memlineage release configs --tenant acme --json")
def release_configs() -> Report:
    """List the tenant's generator configuration versions."""
    with memory() as mem:
        found = mem.configs()
    doc = configs_json(found)
    text = "\n".join(f"{v}  {json.dumps(c)}  {at}" for v, c, at in found)
    return Report(
        doc,
        text
        or "no configurations stored: the first consolidation records the configuration"
        " file's settings as version 1; without a file, the built-in generator is used",
    )


@subcommand(release, "fail", "memlineage release fail acme")
# Not named "tenant": the global --tenant option has that name, and click warns on stderr.
@click.argument("tenant_name", metavar="[TENANT]", required=False)
def release_fail(tenant_name: str | None) -> Report:
    """Declare the tenant's release failed: bypass summaries, fall back, recover forward."""
    if tenant_name:
        settings().tenant = tenant_name
    with memory() as mem, progress_bars() as progress:
        outcome = mem.release_fail(progress)
    lines = [
        f"release of {outcome['tenant']} failed; recovering with configuration"
        f" {outcome['recovered_with'] or 'built-in'}"
    ]
    lines += [
        f"{s['subject']}: {'switched ' + str(s['artifact_id']) if s['switched'] else s['reason']}"
        for s in outcome["subjects"]
    ]
    return Report(outcome, "\n".join(lines))


@subcommand(review, "list", "memlineage review list --tenant acme")
@click.option("--all", "everything", is_flag=True, help="decided reviews too")
def review_list(everything: bool) -> Report:
    """The candidates waiting for review."""
    with memory() as mem:
        found = mem.reviews(None if everything else "pending")
    text = "\n".join(f"{r['artifact_id']}  {r['state']:<8} {r['subject']}" for r in found)
    return Report(found, text or "nothing to review")


@subcommand(review, "show", "memlineage review show summary:user-7:000012-1a2b3c4d")
@click.argument("artifact_id", metavar="ARTIFACT")
def review_show(artifact_id: str) -> Report:
    """A candidate beside the published summary, with the must-preserve set and gate report."""
    with memory() as mem:
        sheet = mem.review(artifact_id)
    kept = sum(1 for i in sheet["must_preserve"] if i["kept"])
    text = "\n".join(
        [
            f"candidate {artifact_id} (gate {'passed' if sheet['gate']['passed'] else 'failed'})",
            sheet["candidate_summary"] or "",
            f"--- published {sheet['published'] or '(none)'}",
            sheet["published_summary"] or "",
            f"--- must-preserve items kept: {kept}/{len(sheet['must_preserve'])}",
        ]
    )
    return Report(sheet, text)


def _decide(verb: str, artifact_id: str, reviewer: str | None, reason: str | None) -> Report:
    who = reviewer or getpass.getuser()
    with memory() as mem:
        decision = getattr(mem, verb)(artifact_id, who, reason)
    doc = decision.to_json()
    text = f"{artifact_id}: {doc['state']}"
    if doc["state"] == "refused":
        text += f" ({doc['reason']}: {doc['detail']}); a rebuild is due"
    return Report(doc, text, 1 if doc["state"] == "refused" else 0)


REVIEWER = click.option("--reviewer", help="who decides (default: the login name)")
REASON = click.option("--reason", help="why, kept with the decision")


@subcommand(review, "approve", "memlineage review approve ARTIFACT --reason 'checked'")
@click.argument("artifact_id", metavar="ARTIFACT")
@REVIEWER
@REASON
def review_approve(artifact_id: str, reviewer: str | None, reason: str | None) -> Report:
    """Approve: switch through the same CAS; refused (exit 1) if the alias or epoch moved."""
    return _decide("approve", artifact_id, reviewer, reason)


@subcommand(review, "reject", "memlineage review reject ARTIFACT --reason 'lost a date'")
@click.argument("artifact_id", metavar="ARTIFACT")
@REVIEWER
@REASON
def review_reject(artifact_id: str, reviewer: str | None, reason: str | None) -> Report:
    """Reject: the candidate is kept as rejected, with the reviewer and the reason."""
    return _decide("reject", artifact_id, reviewer, reason)
