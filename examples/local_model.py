"""Run the bugfix example against a local OpenAI-compatible server (what `make demo-local` runs).

    python examples/local_model.py --base-url http://127.0.0.1:8080/v1 [--model NAME] [--profile llama.cpp]
                                   [--window 8192]

The server is asked for its models first (``GET {base_url}/models``); if nothing answers, this says
so and how to start one, and exits 2. ``--model local`` takes the first model the server lists.
The example is copied to a temporary folder, its envelope gets the profile and window given here
(recompiled, strictly validated), and ``tether run`` drives it with the live timeline; the exit
code is tether's (README: exit codes). Small models often do not follow the tool protocol: the
run then ends NO_PROGRESS or VERIFY_FAILED, which is tether working, not failing.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

from tether.cli.demo_cmds import prepare

EXAMPLE = Path(__file__).resolve().parent / "bugfix"
HOW_TO_START = """start one, e.g.:
  llama.cpp:  llama-server -m MODEL.gguf --port 8080 --ctx-size 8192 --jinja
  Ollama:     ollama serve   (then BASE_URL=http://127.0.0.1:11434/v1 MODEL=qwen2.5-coder)
  vLLM:       vllm serve MODEL --port 8000 --max-model-len 8192 --enable-auto-tool-choice
  LM Studio:  load a model and start the server (BASE_URL=http://127.0.0.1:1234/v1)"""


def served_models(base_url: str) -> list[str]:
    with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=5) as reply:
        data = json.load(reply)
    return [str(m.get("id")) for m in data.get("data", []) if isinstance(m, dict) and m.get("id")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--model", default="local")
    parser.add_argument("--profile", default=None, help="agent.provider_profile (default: detected from the URL)")
    parser.add_argument("--window", type=int, default=None, help="agent.context_window: the server's context size")
    args = parser.parse_args()
    try:
        models = served_models(args.base_url)
    except (OSError, ValueError) as exc:
        print(f"no OpenAI-compatible server answers at {args.base_url} ({exc});\n{HOW_TO_START}", file=sys.stderr)
        return 2
    model = args.model
    if model == "local":
        if not models:
            print(f"{args.base_url}/models lists no model; pass MODEL=NAME", file=sys.stderr)
            return 2
        model = models[0]
    work = prepare(EXAMPLE, Path(tempfile.mkdtemp(prefix="tether-local-")))
    envelope = work / "envelope.yaml"
    settings = ["  request_timeout_s: 600"]
    settings += [f"  provider_profile: {args.profile}"] if args.profile else []
    settings += [f"  context_window: {args.window}"] if args.window else []
    text = envelope.read_text()
    line = next(x for x in text.splitlines() if x.strip().startswith("request_timeout_s:"))
    envelope.write_text(text.replace(line, "\n".join(settings)))
    tether = [sys.executable, "-m", "tether.cli.main"]
    subprocess.run([*tether, "compile", str(work / "plan.yaml"), "-o", str(envelope)], check=True)
    print(f"model openai:{model} at {args.base_url}; workspace {work / 'project'}")
    run = [*tether, "run", "--envelope", str(envelope), "--model", f"openai:{model}", "--base-url", args.base_url]
    return subprocess.run([*run, "--headless"], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
