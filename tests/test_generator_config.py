"""Generator configuration: the file, the tenant's default, the command line, the API key."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from llm_server import FakeServer, running, status
from memlineage import Memory
from memlineage.consolidation.generators.config import resolve
from memlineage.consolidation.generators.deterministic import DeterministicGenerator
from memlineage.errors import BadInput
from memlineage.interfaces.cli import main

SECRET_ENV = "sk-env-memlineage-0a1b2c"
SECRET_OPENAI = "sk-env-openai-3d4e5f"
SECRET_FILE = "sk-file-6a7b8c"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("MEMLINEAGE_OPENAI_API_KEY", "OPENAI_API_KEY", "MEMLINEAGE_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no ./memlineage.toml unless a test writes one


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeServer]:
    with running() as server:
        yield server


def write_config(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


CONFIG = """
[generator]
name = "openai"
base_url = "http://127.0.0.1:9/v1"
model = "everyone-model"
temperature = 0
api_key = "{key}"

[tenants.acme.generator]
model = "acme-model"
seed = 7
"""


def test_without_a_file_the_builtin_generator(tmp_path: Path) -> None:
    settings = resolve("acme")
    assert settings.name == "deterministic" and settings.openai is None


def test_tenant_table_over_the_default_and_the_command_line_over_both(tmp_path: Path) -> None:
    path = write_config(tmp_path / "memlineage.toml", CONFIG.format(key=SECRET_FILE))
    acme = resolve("acme").openai
    other = resolve("globex").openai
    assert acme is not None and other is not None
    assert (acme.model, acme.seed, acme.temperature) == ("acme-model", 7, 0)
    assert (other.model, other.seed) == ("everyone-model", None)
    assert acme.base_url == "http://127.0.0.1:9/v1"
    given = resolve("acme", model="cli-model", base_url="http://h/v1", config=path).openai
    assert given is not None and (given.model, given.base_url) == ("cli-model", "http://h/v1")
    assert resolve("acme", generator="deterministic").name == "deterministic"


def test_the_key_comes_from_the_environment_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_config(tmp_path / "memlineage.toml", CONFIG.format(key=SECRET_FILE))
    assert _key() == SECRET_FILE
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_OPENAI)
    assert _key() == SECRET_OPENAI
    monkeypatch.setenv("MEMLINEAGE_OPENAI_API_KEY", SECRET_ENV)
    assert _key() == SECRET_ENV
    shown = json.dumps(resolve("acme").to_json()) + repr(resolve("acme"))
    assert SECRET_ENV not in shown and '"apiKey": "set"' in shown


def _key() -> str | None:
    config = resolve("acme").openai
    assert config is not None
    return config.api_key


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ('[generator]\nname = "gpt"\n', "generator"),
        ('[generator]\nname = "openai"\n', "generator.model"),
        ('[generator]\nmodel = "m"\ntimeout = "soon"\n', "generator.timeout"),
        ('[generator]\nmodel = "m"\ncolour = "blue"\n', "generator.colour"),
        ('[generator]\nmodel = "m"\nresponse_format = "xml"\n', "generator.response_format"),
        ("[generator\n", "config"),
    ],
)
def test_a_bad_configuration_names_the_field(tmp_path: Path, text: str, field: str) -> None:
    path = write_config(tmp_path / "bad.toml", text)
    with pytest.raises(BadInput) as caught:
        resolve("acme", config=path)
    assert caught.value.field == field


def test_a_bad_configuration_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_config(tmp_path / "bad.toml", '[generator]\nmodel = "m"\ntimeout = "soon"\n')
    code = main(["verify", "--config", path])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "generator.timeout" in err


# ---------------------------------------------------------------------------
# the command line over a store, against the fake server


EVENTS = [
    {"id": "m-1", "subject": "user-7", "text": "The daily run is 5 km."},
    {"id": "m-2", "subject": "user-7", "text": "Never deploy on Fridays.", "kind": "constraint"},
]


def cli(db: str, *argv: str) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    code = main([*argv, "--db", db, "--tenant", "acme", "--json"], stdout=out)
    return code, json.loads(out.getvalue()) if out.getvalue() else {}


def _add(db: str, tmp_path: Path) -> None:
    (tmp_path / "e.jsonl").write_text("\n".join(json.dumps(e) for e in EVENTS) + "\n")
    assert cli(db, "add", str(tmp_path / "e.jsonl"))[0] == 0


def test_consolidate_with_a_model_from_the_command_line(
    db_url: str, tmp_path: Path, fake: FakeServer
) -> None:
    _add(db_url, tmp_path)
    fake.reset()
    code, doc = cli(db_url, "consolidate", "user-7", "--generator", "openai",
                    "--base-url", fake.url, "--model", "fake-model")  # fmt: skip
    assert code == 0 and doc["status"] == "published" and doc["fallback"] is None
    assert [a["outcome"] for a in doc["attempts"]] == ["passed"]  # type: ignore[union-attr]
    assert fake.requests[0].body["model"] == "fake-model"
    code, recalled = cli(db_url, "recall", "user-7")
    assert recalled["mode"] == "summary" and recalled["artifact_id"] == doc["artifact_id"]


def test_consolidate_uses_the_tenant_default_from_the_file(
    db_url: str, tmp_path: Path, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _add(db_url, tmp_path)
    config = '[generator]\nname = "deterministic"\n\n[tenants.acme.generator]\nname = "openai"\n'
    config += f'base_url = "{fake.url}"\nmodel = "acme-model"\n'
    monkeypatch.setenv("MEMLINEAGE_CONFIG", write_config(tmp_path / "conf.toml", config))
    fake.reset()
    code, doc = cli(db_url, "consolidate", "user-7")
    assert code == 0 and doc["status"] == "published"
    assert [r.body["model"] for r in fake.requests] == ["acme-model"]


def test_the_key_never_reaches_the_output(
    db_url: str,
    tmp_path: Path,
    fake: FakeServer,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level("DEBUG")
    _add(db_url, tmp_path)
    monkeypatch.setenv("MEMLINEAGE_OPENAI_API_KEY", SECRET_ENV)
    fake.reset(status(401, f"Incorrect API key provided: {SECRET_ENV}"))
    argv = ["consolidate", "user-7", "--base-url", fake.url, "--model", "m"]
    argv += ["--db", db_url, "--tenant", "acme"]
    assert main(argv) == 0  # published: the built-in output, the fallback recorded
    assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET_ENV}"
    assert main(["artifacts", "user-7", "--db", db_url, "--tenant", "acme", "--json"]) == 0
    fake.reset(default=status(401, f"Incorrect API key provided: {SECRET_ENV}"))
    code = main(["verify", "--base-url", fake.url, "--model", "m", "--json"])
    assert code == 1  # every call refused: nothing certified
    captured = capsys.readouterr()
    assert "fallback" in captured.out
    for text in (captured.out, captured.err, caplog.text):
        assert SECRET_ENV not in text


def test_the_builtin_generator_certifies(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--generator", "deterministic"]) == 0
    out = capsys.readouterr().out
    assert "certified" in out and "FAIL" not in out
    assert isinstance(DeterministicGenerator(), DeterministicGenerator)


# ---------------------------------------------------------------------------
# one source of truth: the tenant's stored configuration, which the file seeds


def test_the_file_seeds_the_stored_configuration_and_then_the_store_wins(
    db_url: str, tmp_path: Path, fake: FakeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _add(db_url, tmp_path)
    path = tmp_path / "conf.toml"
    text = f'[generator]\napi_key = "{SECRET_FILE}"\n\n[tenants.acme.generator]\n'
    text += f'base_url = "{fake.url}"\nmodel = "acme-model"\nseed = 7\n'
    monkeypatch.setenv("MEMLINEAGE_CONFIG", write_config(path, text))
    fake.reset()
    assert cli(db_url, "consolidate", "user-7")[0] == 0
    assert [r.body["model"] for r in fake.requests] == ["acme-model"]
    assert fake.requests[0].headers["authorization"] == f"Bearer {SECRET_FILE}"
    _code, configs = cli(db_url, "release", "configs")
    assert configs == [  # type: ignore[comparison-overlap]
        {
            "version": 1,
            "config": {
                "generator": "openai",
                "base_url": fake.url,
                "model": "acme-model",
                "seed": 7,
            },
            "created_at": configs[0]["created_at"],  # type: ignore[index]
        }
    ]
    assert SECRET_FILE not in json.dumps(configs)  # the key stays out of the store
    # the file changes: the stored version still decides, until it is rolled out
    write_config(path, text.replace("acme-model", "newer-model"))
    fake.reset()
    assert cli(db_url, "consolidate", "user-7", "--force")[0] == 0
    assert [r.body["model"] for r in fake.requests] == ["acme-model"]
    assert cli(db_url, "release", "rollout")[1]["version"] == 2
    fake.reset()
    assert cli(db_url, "consolidate", "user-7", "--force")[0] == 0
    assert [r.body["model"] for r in fake.requests] == ["newer-model"]
    assert sorted(_config_versions(db_url)) == [1, 1, 2]


def test_a_one_off_generator_is_recorded_in_the_manifest_not_stored(
    db_url: str, tmp_path: Path, fake: FakeServer
) -> None:
    _add(db_url, tmp_path)
    fake.reset()
    code, doc = cli(db_url, "consolidate", "user-7", "--base-url", fake.url, "--model", "once")
    assert code == 0 and [r.body["model"] for r in fake.requests] == ["once"]
    assert [a["generator"] for a in doc["attempts"]] == ["openai"]  # type: ignore[union-attr]
    assert cli(db_url, "release", "configs")[1] == []  # type: ignore[comparison-overlap]
    assert _config_versions(db_url) == [None]


def _config_versions(db: str) -> list[int | None]:
    with Memory(db, tenant="acme") as memory:
        return [a.manifest.config_version for a in memory.artifacts("user-7")]


def test_a_worker_records_the_stored_version_it_used(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_config(tmp_path / "conf.toml", '[generator]\nname = "deterministic"\n')
    monkeypatch.setenv("MEMLINEAGE_CONFIG", path)
    with Memory(db_url, tenant="acme") as memory:
        memory.add(EVENTS)
        memory.queue(["user-7"])
        [report] = memory.work()
        assert report.outcome == "published"
        [artifact] = memory.artifacts("user-7")
        assert artifact.manifest.config_version == 1
        assert [c for _, c, _ in memory.configs()] == [{"generator": "deterministic"}]


def test_an_api_key_is_never_stored(memory: Memory) -> None:
    with pytest.raises(BadInput) as caught:
        memory.rollout({"generator": "openai", "model": "m", "api_key": SECRET_FILE})
    assert caught.value.field == "api_key"
    assert memory.configs() == []
