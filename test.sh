#!/usr/bin/env bash
# Runs the whole test suite in the project environment (.venv, made by ./install.sh).
# PostgreSQL and Redis on 127.0.0.1 are started here when installed but stopped; when one is
# not installed this says so, and the suites that need it skip (or fail under CI=true).
# Extra arguments go to pytest, e.g. ./test.sh tests/api -x. Without test paths (options only,
# e.g. --durations=30) the whole suite runs as two pytest sessions side by side (tests/lanes.py
# says which tests go where and why); KJUDGE_TEST_LANES=1 runs it as one session instead.
set -uo pipefail
cd "$(dirname "$0")"

VENV=${KJUDGE_VENV:-.venv}
if [ ! -x "$VENV/bin/python" ]; then
    echo "test.sh: no $VENV: run ./install.sh first" >&2
    exit 2
fi
missing=()

if command -v pg_isready >/dev/null 2>&1 && pg_isready -q -h 127.0.0.1 -p 5432; then
    :
elif [ -d /etc/postgresql ] && command -v pg_ctlcluster >/dev/null 2>&1; then
    echo "test.sh: starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start ||
        echo "test.sh: could not start PostgreSQL (run as root or as the postgres user?)" >&2
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
    pg_isready -q -h 127.0.0.1 -p 5432 || missing+=("PostgreSQL (installed, but not answering on 127.0.0.1:5432)")
else
    missing+=("PostgreSQL (apt-get install postgresql; user postgres with trust auth on 127.0.0.1:5432)")
fi

if command -v redis-cli >/dev/null 2>&1 && redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then
    :
elif command -v redis-server >/dev/null 2>&1; then
    echo "test.sh: starting Redis"
    mkdir -p /var/lib/redis /var/log/redis 2>/dev/null || true
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log ||
        echo "test.sh: could not start Redis" >&2
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && break; sleep 1; done
    redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 || missing+=("Redis (installed, but not answering on 127.0.0.1:6379)")
else
    missing+=("Redis (apt-get install redis-server)")
fi

[ -x /usr/bin/chromium ] && [ -x /usr/bin/chromedriver ] ||
    missing+=("Chromium for the dashboard's browser test (apt-get install chromium chromium-driver)")
command -v bwrap >/dev/null 2>&1 || missing+=("bubblewrap, the sandbox (apt-get install bubblewrap)")

if [ ${#missing[@]} -gt 0 ]; then
    echo "test.sh: missing — the tests that need these skip here and fail under CI=true:" >&2
    printf '  - %s\n' "${missing[@]}" >&2
fi
for arg in "$@"; do
    # A test path or an option's separate value (-k EXPR): the run is the one pytest selects.
    [[ $arg == -* ]] || exec "$VENV/bin/python" -m pytest -q "$@"
done
if [ "${KJUDGE_TEST_LANES:-2}" = 1 ]; then
    exec "$VENV/bin/python" -m pytest -q "$@"
fi
exec "$VENV/bin/python" tests/lanes.py -q "$@"
