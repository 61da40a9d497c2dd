#!/usr/bin/env bash
# One command from a fresh Debian/Ubuntu machine to an installed kjudge.
# - system packages: bubblewrap (the sandbox) and, where available, the HIP headers
# - Python: kjudge editable with its test extras. KJUDGE_TORCH pins torch (default: the CPU
#   build 2.13.0 that CI uses; on a GPU node set KJUDGE_TORCH="" to keep the torch you have).
set -euo pipefail
cd "$(dirname "$0")"

if ! command -v bwrap >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null
    else
        echo "install.sh: please install bubblewrap (the candidate sandbox), e.g. 'sudo apt-get install bubblewrap'" >&2
    fi
fi

PY=${PYTHON:-python3}
TORCH_SPEC=${KJUDGE_TORCH-torch==2.13.0}
# shellcheck disable=SC2086
"$PY" -m pip install -q $TORCH_SPEC -e ".[dev]"
echo "kjudge installed: $("$PY" -m kjudge --help >/dev/null && echo ok)"
