#!/usr/bin/env bash
# Everything envcheck needs a real GPU for, in one command on a lent GPU machine.
#
# Here, once per session:  make gpu-wheels     (the wheels the device image lacks -> .whl/)
# Then with the device tool, from the repo root (each call well inside its 10 minutes):
#   run  command="bash benchmarks/gpu_session.sh"           carry=[".whl"]
#   run  command="bash benchmarks/gpu_session.sh accuracy"  carry=[".whl"]
#
# The first writes into $OUT (at most 8 files come back from the device):
#   session.log          every step's output: nvidia-smi, the doctor's text report, the probe's
#   nvml-recording.json  what the real NVML answered, as fake-NVML data, and the fake's replay
#                        differences (tests/fakes/record_nvml.py): the fidelity check
#   collect.json         `envcheck collect`: the snapshot of the machine (scrubbed)
#   doctor-deep.json     `envcheck doctor --deep --format json` (scrubbed)
#   probe-torch.json     `envcheck probe --framework torch --tune-workers --format json` (scrubbed)
#   report.html          the same probe report as HTML, its timeline from a real GPU
#   pytest-gpu.txt       tests/test_gpu_machine.py (marked `gpu`) and the NVML/sampler tests
# The second runs benchmarks/probe_accuracy.py with torch on the GPU:
#   probe_accuracy-gpu.json, accuracy.log
# Commit what comes back as fixtures (tests/fixtures/...) and results (benchmarks/results/),
# with the machine written down in benchmarks/README.md.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/benchmarks/.work/gpu-session}
mkdir -p "$OUT"
PY=${PYTHON:-python3}

if compgen -G ".whl/*.whl" >/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/envcheck-site .whl/*.whl || { echo "installing .whl/ failed" >&2; exit 2; }
    export PYTHONPATH=/tmp/envcheck-site:$PWD${PYTHONPATH:+:$PYTHONPATH}
else
    export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
export PYTHONUNBUFFERED=1 NO_COLOR=1 COLUMNS=110
ENVCHECK=("$PY" -m envcheck)

step() {  # step NAME COMMAND...: run it, log it, never stop the session
    local started=$SECONDS
    echo "=== $1"
    shift
    "$@"
    echo "=== exit $? after $((SECONDS - started)) s"
}

scrub() { for f in "$@"; do [ -s "$f" ] && $PY tests/fixtures/scrub.py "$f"; done; }

if [ "${1:-}" = "accuracy" ]; then
    step "probe accuracy suite (torch)" "$PY" benchmarks/probe_accuracy.py --python "$PY" \
        --framework torch --budget "${BUDGET:-8}" --out "$OUT/probe_accuracy-gpu.json" \
        2>&1 | tee "$OUT/accuracy.log"
    exit 0
fi

{
    step "machine" bash -c 'nvidia-smi; nproc; free -g; uname -a; '"$PY"' --version'
    step "packages" "$PY" -c 'import importlib.metadata as m
for n in ("torch", "nvidia-ml-py", "typer", "rich", "psutil", "jsonschema", "packaging"):
    try: print(n, m.version(n))
    except m.PackageNotFoundError: print(n, "absent")'
    step "NVML recording and the fake's replay" "$PY" tests/fakes/record_nvml.py \
        -o "$OUT/nvml-recording.json"
    step "envcheck collect" "${ENVCHECK[@]}" collect -o "$OUT/collect.json"
    step "envcheck doctor --deep (text)" "${ENVCHECK[@]}" doctor --deep --exit-zero
    step "envcheck doctor --deep (json)" "${ENVCHECK[@]}" doctor --deep --exit-zero \
        --format json -o "$OUT/doctor-deep.json"
    step "envcheck probe --tune-workers" "${ENVCHECK[@]}" probe --framework torch \
        --tune-workers --exit-zero --format json -o "$OUT/probe-torch.json"
    scrub "$OUT/nvml-recording.json" "$OUT/collect.json" "$OUT/doctor-deep.json" \
        "$OUT/probe-torch.json"
    step "the probe report as text" "${ENVCHECK[@]}" doctor --facts "$OUT/probe-torch.json" \
        --exit-zero
    step "the probe report as html" "${ENVCHECK[@]}" doctor --facts "$OUT/probe-torch.json" \
        --exit-zero --format html -o "$OUT/report.html"
    step "tests on the real GPU" "$PY" -m pytest -p no:cacheprovider -rs -q \
        tests/test_gpu_machine.py tests/test_record_nvml.py tests/collectors/test_collector_gpu.py \
        tests/probe/test_sampler.py >"$OUT/pytest-gpu.txt" 2>&1
    tail -5 "$OUT/pytest-gpu.txt"
} 2>&1 | tee "$OUT/session.log"
