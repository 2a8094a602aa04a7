# Yardstick: `make run` starts the platform on this machine, `make test` runs the tests.
# Both create .venv on first use and reinstall it only when pyproject.toml or client/pyproject.toml changes.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALL_STAMP := $(VENV)/.installed
MANAGE := $(BIN)/python manage.py

HOST ?= 127.0.0.1
PORT ?= 8000
PYTEST_ARGS ?=

# Commands `make run` runs after `migrate`, before it prints the admin login and starts the server:
# the demo study (990 items, running; does nothing if it exists). `make run RUN_SETUP=` skips it.
RUN_SETUP ?= $(MANAGE) load_demo

.PHONY: install messages run test lint worker beat

install: $(INSTALL_STAMP) messages

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(INSTALL_STAMP): pyproject.toml client/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -e '.[test]' -e ./client
	touch $(INSTALL_STAMP)

# The annotators' pages' catalogs (locale/*/LC_MESSAGES/*.po) compiled by gettext's msgfmt (Debian's
# `gettext` package) into the .mo files Django reads. Runs every time: compilemessages skips a catalog whose
# .mo is newer than its .po, so that a changed or new .po is compiled and an unchanged one costs nothing.
messages: $(INSTALL_STAMP)
	@command -v msgfmt >/dev/null || { echo "make needs gettext's msgfmt to compile the annotators' translations:" \
		"install the 'gettext' package (Debian/Ubuntu: apt-get install gettext; macOS: brew install gettext)" >&2; exit 1; }
	$(MANAGE) compilemessages --ignore=.venv

run: install
	$(MANAGE) migrate --noinput
	$(RUN_SETUP)
	$(MANAGE) ensure_admin --url http://$(HOST):$(PORT)/admin/
	$(MANAGE) runserver $(HOST):$(PORT)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: $(INSTALL_STAMP)
	$(BIN)/ruff check .

# The full stack: workers and beat need a broker shared with the web process (docs/operators.md, "Full stack").
worker: $(INSTALL_STAMP)
	@$(call require_broker,worker)
	$(BIN)/celery -A config worker -l info

beat: $(INSTALL_STAMP)
	@$(call require_broker,beat)
	$(BIN)/celery -A config beat -l info

define require_broker
if [ -z "$$CELERY_BROKER_URL$$REDIS_URL" ]; then \
	echo "make $(1) needs a broker: set REDIS_URL (or CELERY_BROKER_URL), e.g. REDIS_URL=redis://127.0.0.1:6379/0," >&2; \
	echo "and the same DATABASE_URL and REDIS_URL for 'make run' (docs/operators.md, \"Full stack\")." >&2; \
	exit 1; \
fi
endef
