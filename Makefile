# Two entry points (see README): `make demo` and `make test`. Each bootstraps .venv.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev,otel,langgraph,openai-agents,agentdojo,postgres,temporal,hook-schemas]'
	touch $(STAMP)

# LiteLLM's proxy (pyproject's `proxy` extra) in a venv of its own: the provider tests start it on 127.0.0.1.
PROXY_VENV := .venv-proxy
PROXY_STAMP := $(PROXY_VENV)/.installed
$(PROXY_STAMP): pyproject.toml
	$(PY) -m venv $(PROXY_VENV)
	$(PROXY_VENV)/bin/pip install --quiet "$$($(PY) -c "import tomllib; print(*tomllib.load(open('pyproject.toml', 'rb'))['project']['optional-dependencies']['proxy'])")"
	touch $(PROXY_STAMP)

.PHONY: venv demo demo-local test lint typecheck bench
venv: $(STAMP)

# The demo removes its scratch directory at the end; `make demo KEEP=1` keeps it to inspect.
demo: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/tether demo $(if $(KEEP),--keep)

# The bugfix example against a local OpenAI-compatible server (llama.cpp, Ollama, vLLM, LM Studio).
# make demo-local BASE_URL=http://127.0.0.1:8080/v1 [MODEL=qwen2.5-coder] [PROFILE=llama.cpp] [WINDOW=8192]
BASE_URL ?= http://127.0.0.1:8080/v1
MODEL ?= local
demo-local: $(STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python examples/local_model.py --base-url "$(BASE_URL)" --model "$(MODEL)" \
		$(if $(PROFILE),--profile "$(PROFILE)") $(if $(WINDOW),--window "$(WINDOW)")

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/lint-imports

typecheck: $(STAMP)
	$(BIN)/mypy

# Two workers (pytest-xdist), a test file per worker at a time: module fixtures (a browser, a server) start once.
# tether's bytecode compiled first, as a regular install's is: an editable one has none, and where
# PYTHONDONTWRITEBYTECODE is set (as on this machine) each of the suite's tether processes compiled its ~200 modules
# again (~0.35 s each; the suite on CI's command 885 s before, 810 s after).
test: lint typecheck $(PROXY_STAMP)
	$(BIN)/python -m compileall -q src
	PATH="$(CURDIR)/$(BIN):$$PATH" TETHER_LITELLM="$(CURDIR)/$(PROXY_VENV)/bin/litellm" $(BIN)/pytest -n auto --dist loadfile

bench: $(STAMP)
	$(BIN)/python benchmarks/eventlog.py
