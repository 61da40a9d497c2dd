#!/usr/bin/env bash
# Everything kjudge needs to check on a lent GPU machine, in one call (device time is scarce).
# Usage on the device: KJUDGE_COMMIT=<sha> bash bench/device_run.sh [tests|bench|all]   (carry .whl)
# BENCHES, BENCH_ARGS (e.g. "--merge --only relu"), TEST_DIRS, PYTEST_ARGS narrow a run.
# Writes logs and JSON results under $OUT (or ./device-out when $OUT is unset).
set -uo pipefail
OUT=${OUT:-$PWD/device-out}; mkdir -p "$OUT"
what=${1:-all}
export PYTHONUNBUFFERED=1

# Missing pure-Python deps travel as wheels, installed into a folder named site-packages (the
# sandbox binds site-packages folders read-only, never arbitrary PYTHONPATH entries); bubblewrap
# travels as a .deb unpacked under /tmp.
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /opt/kjudge/site-packages .whl/*.whl || exit 1
fi
if ! command -v bwrap >/dev/null 2>&1 && ls .whl/deb/bubblewrap*.deb >/dev/null 2>&1; then
    dpkg -x .whl/deb/bubblewrap*.deb /tmp/bw && export PATH=/tmp/bw/usr/bin:$PATH
fi
export PYTHONPATH=$PWD:/opt/kjudge/site-packages${PYTHONPATH:+:$PYTHONPATH}
export KJUDGE_HOME=/tmp/kjudge-home
# One test home for both pytest runs below (and every xdist worker): the header and the lite
# runtimes are built once, not again for the exclusive tests.
export KJUDGE_TEST_HOME=${KJUDGE_TEST_HOME:-/tmp/kjudge-test-home}

{
    nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
    python3 -c 'import sys, torch, triton; print(sys.version); print("torch", torch.__version__, "triton", triton.__version__, torch.cuda.get_device_name(0))'
    command -v bwrap && bwrap --unshare-all --die-with-parent --ro-bind / / --dev /dev true && echo "bwrap ok"
    nproc
} 2>&1 | tee "$OUT/env.txt"

# Benches first: reference_kernels builds every native kernel in parallel into the shared cache
# ($KJUDGE_HOME), which the GPU tests then read instead of compiling one at a time.
if [ "$what" = bench ] || [ "$what" = all ]; then
    for b in ${BENCHES:-bench/reference_kernels.py bench/eval_latency.py}; do
        [ -f "$b" ] || continue
        name=$(basename "$b" .py)
        timeout -s INT -k 30 ${BENCH_TIMEOUT:-900} python3 "$b" --out "$OUT/$name.json" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/$name.log" | tail -40
    done
fi
if [ "$what" = tests ] || [ "$what" = all ]; then
    gpu_dirs=$(ls -d ${TEST_DIRS:-tests/evaluator tests/build tests/integrity tests/adversarial tests/problems tests/service} 2>/dev/null)
    # SIGINT at the time limit: pytest (and xdist) still print which tests failed and why, where a
    # plain kill would leave only a line of dots. Tests that assert on device-wide state (free
    # memory after an attack) run afterwards, one at a time.
    timeout -s INT -k 30 ${TEST_TIMEOUT:-1800} python3 -m pytest -m "gpu and not gpu_exclusive" -rfE --tb=short \
        ${PYTEST_ARGS:--q -n 4 --dist loadfile --durations=40} -p no:cacheprovider --junitxml="$OUT/gpu_tests.xml" $gpu_dirs 2>&1 | tee "$OUT/gpu_tests.log" | tail -60
    timeout -s INT -k 30 ${EXCLUSIVE_TIMEOUT:-600} python3 -m pytest -m gpu_exclusive -rfE --tb=short -q --durations=5 \
        -p no:cacheprovider --junitxml="$OUT/gpu_exclusive.xml" $gpu_dirs 2>&1 | tee "$OUT/gpu_exclusive.log" | tail -40
fi
