"""Serving memory to other processes: ``serve`` (HTTP), ``keys`` (its API keys), ``mcp``."""

from __future__ import annotations

import importlib

import click

from memlineage.interfaces.cli.app import (
    Report,
    command,
    global_options,
    memory,
    reporting,
    root,
    settings,
)

# The modules each optional extra brings, as ``import`` names them.
EXTRAS: dict[str, tuple[str, ...]] = {
    "server": ("fastapi", "uvicorn", "jinja2", "python_multipart", "swagger_ui_bundle"),
    "mcp": ("mcp",),
}


class MissingExtra(click.ClickException):
    exit_code = 2


def require_extra(extra: str, command_name: str) -> None:
    """One line naming the extra to install, instead of a traceback, on a core install."""
    for module in EXTRAS[extra]:
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            missing = exc.name or module
            raise MissingExtra(
                f"{command_name} needs the {extra} extra (module {missing!r} is not installed):"
                f" pip install 'memlineage[{extra}]'"
            ) from None


LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


@command("serve", "memlineage serve --db memory.db --port 8080", json_option=False)
@click.option("--host", default="127.0.0.1", show_default=True, help="interface to bind")
@click.option("--port", default=8080, show_default=True, type=click.IntRange(1, 65535))
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS),
    default="info",
    show_default=True,
    help="uvicorn's log level; info logs each request (its access log), warning does not",
)
def serve(host: str, port: int, log_level: str) -> Report:
    """Run the HTTP service (keys from `memlineage keys create`); binds 127.0.0.1 by default."""
    require_extra("server", "serve")
    import uvicorn

    from memlineage.interfaces.http import create_app

    app = create_app(settings().db, host=host)
    base = f"http://{host}:{port}" if ":" not in host else f"http://[{host}]:{port}"
    mcp_url = f", MCP {base}{app.state.mcp_path}" if app.state.mcp_path else ""
    click.echo(
        f"memlineage: serving {base} (API docs {base}/docs, review page {base}/review,"
        f" metrics {base}/metrics{mcp_url}); Ctrl-C stops",
        err=True,
    )
    uvicorn.run(app, host=host, port=port, log_level=log_level, access_log=True)
    return Report({"stopped": True}, "")


@command("mcp", "memlineage mcp --db memory.db --tenant acme", json_option=False)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "streamable-http"]),
    default="stdio",
    show_default=True,
    help="stdio (one --tenant) or streamable HTTP (the tenant of each request's API key)",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="interface to bind (HTTP)")
@click.option("--port", default=8081, show_default=True, type=click.IntRange(1, 65535))
def mcp(transport: str, host: str, port: int) -> Report:
    """Run the MCP server, for an agent to remember, recall, revoke and ask why.

    Over streamable HTTP it answers at http://HOST:PORT/mcp and every request needs
    `Authorization: Bearer KEY`, a key from `memlineage keys create`."""
    require_extra("mcp", "mcp")
    from memlineage.interfaces import mcp_server

    conf = settings()
    if transport == "stdio":
        mcp_server.build_server(conf.db, tenant=conf.tenant).run("stdio")
    else:
        import uvicorn

        app = mcp_server.http_app(conf.db, host=host)
        uvicorn.run(app, host=host, port=port, log_level="warning")
    return Report({"stopped": True}, "")


@root.group("keys", epilog="Example: memlineage keys create --tenant acme --json")
def keys() -> None:
    """API keys of the HTTP service, each scoped to one tenant."""


@keys.command("create", epilog="Example: memlineage keys create --tenant acme --label ci --json")
@click.option("--label", help="a note to tell keys apart")
@global_options
@reporting
def keys_create(label: str | None) -> Report:
    """Create a key for the tenant; the key is printed once and only its hash is stored."""
    with memory() as mem:
        key_id, key = mem.create_key(label)
    doc = {"key": key, "key_id": key_id, "tenant": mem.tenant}
    return Report(doc, f"{key}\n(key id {key_id}; shown once, store it now)")


@keys.command("list", epilog="Example: memlineage keys list --tenant acme")
@global_options
@reporting
def keys_list() -> Report:
    """List the tenant's keys (never the keys themselves)."""
    with memory() as mem:
        found = mem.list_keys()
    lines = [
        f"{k.key_id}  {'revoked ' + (k.revoked_at or '') if k.revoked_at else 'active'}"
        f"  {k.label or ''}"
        for k in found
    ]
    return Report([k.to_json() for k in found], "\n".join(lines) or "no keys")


@keys.command("revoke", epilog="Example: memlineage keys revoke 3f2a9c1b0d4e --tenant acme")
@click.argument("key_id", metavar="KEY_ID")
@global_options
@reporting
def keys_revoke(key_id: str) -> Report:
    """Revoke a key: every request with it is 401 from now on."""
    with memory() as mem:
        changed = mem.revoke_key(key_id)
    text = f"revoked {key_id}" if changed else f"nothing to do: {key_id} was revoked already"
    return Report({"key_id": key_id, "changed": changed}, text)
