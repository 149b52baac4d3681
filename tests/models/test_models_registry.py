"""Model specs → models: scripted files, provider keys and URLs, clear errors, lazy SDK imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tether.models
from tether.errors import InputError
from tether.models.anthropic_adapter import AnthropicModel
from tether.models.base import Message, Model
from tether.models.openai_adapter import OpenAIModel
from tether.models.registry import NO_KEY_PLACEHOLDER, load_model
from tether.models.scripted import ScriptedModel
from tether.models.testing import PROXY_ENV_VARS, OpenAIWireServer, openai_chat

KEYS = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in (*PROXY_ENV_VARS, *KEYS):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")


def test_scripted_file_is_relative_to_base_dir(tmp_path: Path) -> None:
    (tmp_path / "plans").mkdir()
    (tmp_path / "plans" / "t.yaml").write_text("turns: [{text: hello}]\n")
    model = load_model("scripted:plans/t.yaml", base_dir=tmp_path)
    assert isinstance(model, ScriptedModel) and isinstance(model, Model)
    assert model.name == "scripted:plans/t.yaml"
    assert model.complete([], [], max_tokens=5).text == "hello"


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("gpt-4.1", "expected one of scripted:FILE, openai:MODEL, anthropic:MODEL"),
        ("ollama:llama3", "expected one of scripted:FILE, openai:MODEL, anthropic:MODEL"),
        ("openai:", "missing MODEL"),
        ("scripted: ", "missing FILE"),
    ],
)
def test_bad_specs_say_what_was_expected(tmp_path: Path, spec: str, says: str) -> None:
    with pytest.raises(InputError, match=says):
        load_model(spec, base_dir=tmp_path)


def test_openai_needs_a_key_unless_pointed_at_a_local_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(InputError, match="OPENAI_API_KEY"):
        load_model("openai:gpt-4.1", base_dir=tmp_path)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
    model = load_model("openai:llama3.1", base_dir=tmp_path)
    assert isinstance(model, OpenAIModel)
    assert model.client.api_key == NO_KEY_PLACEHOLDER
    assert str(model.client.base_url).startswith("http://127.0.0.1:1/v1")
    assert model.token_param == "max_tokens"
    assert model.name == "openai:llama3.1"


def test_explicit_base_url_and_key_win_over_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:2")
    model = load_model("anthropic:claude-x", base_dir=tmp_path, base_url="http://127.0.0.1:3", api_key="explicit")
    assert isinstance(model, AnthropicModel)
    assert model.client.api_key == "explicit"
    assert str(model.client.base_url).startswith("http://127.0.0.1:3")
    assert load_model("anthropic:claude-x", base_dir=tmp_path).client.api_key == "from-env"  # type: ignore[attr-defined]


def test_anthropic_without_credentials_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="ANTHROPIC_API_KEY"):
        load_model("anthropic:claude-sonnet-4-5", base_dir=tmp_path)


def test_a_loaded_openai_model_talks_to_the_base_url(tmp_path: Path) -> None:
    with OpenAIWireServer([openai_chat("hi from the wire")]) as server:
        model = load_model("openai:gpt-test", base_dir=tmp_path, base_url=server.base_url, api_key="test")
        assert model.complete([Message("user", "hello")], [], max_tokens=10).text == "hi from the wire"


def test_scripted_runs_do_not_import_the_provider_sdks(tmp_path: Path) -> None:
    """Startup cost: the SDKs take about a second to import; a scripted run must not pay it."""
    (tmp_path / "t.yaml").write_text("turns: [{text: hi}]\n")
    code = (
        "import sys; from pathlib import Path; from tether.models import load_model; "
        f"load_model('scripted:t.yaml', base_dir=Path({str(tmp_path)!r})); "
        "print(sorted(m for m in ('openai', 'anthropic') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_public_surface_is_pinned() -> None:
    assert sorted(tether.models.__all__) == sorted(
        [
            "TERMINATIONS",
            "FunctionModel",
            "Message",
            "Model",
            "ModelResponse",
            "ScriptInvalid",
            "ScriptedModel",
            "Termination",
            "ToolCall",
            "ToolSpec",
            "Usage",
            "call",
            "complete_with_retries",
            "cost_usd",
            "load_model",
            "price_for",
            "price_known",
            "reply",
        ]
    )
    for name in tether.models.__all__:
        assert hasattr(tether.models, name), name
