#!/usr/bin/env bash
# Installs kjudge into a project virtual environment, .venv (never the system Python).
# - system packages, when run as root with apt-get: bubblewrap (the candidate sandbox),
#   python3-venv when the venv module is missing, and chromium + chromium-driver for the
#   dashboard's browser test (KJUDGE_NO_BROWSER=1 skips them), docker-compose (validates the
#   Compose file in the tests);
# - Python: kjudge editable with its test extras. KJUDGE_TORCH pins torch (default: the CPU
#   build 2.13.0 that CI uses; on a GPU node set KJUDGE_TORCH="" to keep the torch you have,
#   and KJUDGE_VENV_SYSTEM_SITE=1 to let the venv see it).
# Then: .venv/bin/kjudge ... (or `source .venv/bin/activate`); ./test.sh runs the tests.
set -euo pipefail
cd "$(dirname "$0")"

PY=${PYTHON:-python3}
VENV=${KJUDGE_VENV:-.venv}
APT_PACKAGES=()
command -v bwrap >/dev/null 2>&1 || APT_PACKAGES+=(bubblewrap)
"$PY" -c "import venv, ensurepip" >/dev/null 2>&1 || APT_PACKAGES+=(python3-venv)
# Compose validates docker-compose.yml and its profiles without an engine
# (tests/service/test_deploy_compose.py); Debian packages Compose v1.
if ! command -v docker-compose >/dev/null 2>&1 && ! docker compose version >/dev/null 2>&1; then
    APT_PACKAGES+=(docker-compose)
fi
if [ "${KJUDGE_NO_BROWSER:-0}" != 1 ]; then
    [ -x /usr/bin/chromium ] || APT_PACKAGES+=(chromium)
    [ -x /usr/bin/chromedriver ] || APT_PACKAGES+=(chromium-driver)
fi
if [ ${#APT_PACKAGES[@]} -gt 0 ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "install.sh: apt-get install ${APT_PACKAGES[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${APT_PACKAGES[@]}" >/dev/null
    else
        echo "install.sh: please install: ${APT_PACKAGES[*]} (e.g. sudo apt-get install ${APT_PACKAGES[*]});" \
            "bubblewrap is the sandbox, chromium/chromium-driver only the dashboard's browser test" >&2
    fi
fi

if [ ! -x "$VENV/bin/python" ]; then
    SITE=()
    [ "${KJUDGE_VENV_SYSTEM_SITE:-0}" = 1 ] && SITE=(--system-site-packages)
    "$PY" -m venv "${SITE[@]}" "$VENV"
fi
TORCH_SPEC=${KJUDGE_TORCH-torch==2.13.0}
"$VENV/bin/python" -m pip install -q --upgrade pip
# shellcheck disable=SC2086
"$VENV/bin/python" -m pip install -q $TORCH_SPEC -e ".[dev]"
"$VENV/bin/kjudge" --help >/dev/null
echo "kjudge installed in $VENV: run $VENV/bin/kjudge (or: source $VENV/bin/activate)"
