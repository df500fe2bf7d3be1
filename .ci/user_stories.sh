#!/usr/bin/env bash
# The three user stories, run against the installed wheel from a folder outside the source tree:
# a person (`analyze --hw`, every -o format, hw list/show, a JAX program), a CI gate (save a
# baseline, pass it, fail it with exit 1 on a slower model) and a search loop (CostModel.score).
# Usage: bash .ci/user_stories.sh SAMPLES_DIR   (with the wheel's `analyze` first on PATH)
# Each step states the exit code it expects; any other code (3 above all) fails the script.
set -uo pipefail
SAMPLES=$(cd "$1" && pwd)
WORK=$(mktemp -d)
cd "$WORK"
# nothing of the source tree may be importable from here: the installed package must serve
PY_WHERE=$(python -c 'import analyzer, os; print(os.path.dirname(analyzer.__file__))')
case "$PY_WHERE" in
    "$(dirname "$SAMPLES")"*) echo "user stories: analyzer imported from the source tree ($PY_WHERE)" >&2; exit 1;;
esac
fails=0
expect() {   # expect CODE COMMAND...: run it, output to a log, check the exit code
    local want=$1; shift
    "$@" > step.out 2> step.err
    local got=$?
    if [ "$got" != "$want" ]; then
        echo "FAIL (exit $got, expected $want): $*" >&2
        tail -5 step.err >&2
        fails=$((fails + 1))
    else
        echo "ok   (exit $got): $*"
    fi
}
cp "$SAMPLES"/transformer.onnx "$SAMPLES"/dynamic_batch.onnx "$SAMPLES"/mlp.onnx "$SAMPLES"/jax_models.py .

# a person
expect 0 analyze transformer.onnx --hw a100,h100 --top 8
for ext in json csv md html; do
    expect 0 analyze transformer.onnx --hw a100 -o "report.$ext"
    [ -s "report.$ext" ] || { echo "FAIL: report.$ext is empty" >&2; fails=$((fails + 1)); }
done
expect 0 analyze transformer.onnx --hw a100 --explain "$(python -c '
import json; print(json.load(open("report.json"))["nodes"][0]["name"])')"
expect 0 analyze hw list
expect 0 analyze hw show a100
expect 2 analyze hw show no-such-chip
expect 2 analyze missing.onnx
expect 0 analyze jax_models.py:mlp_infer --input x=f32[8,784] --hw a100
expect 0 analyze mlp.onnx --hw a100 --train --batch 32 --devices 1,8   # links, nodes, NCCL constants
expect 0 analyze hw list --links

# a CI gate: save, pass, then fail with exit 1 on a slower model (batch 64 instead of 1)
expect 0 analyze dynamic_batch.onnx --dim batch=1 --hw a100,t4 --save-baseline base.json
expect 0 analyze dynamic_batch.onnx --dim batch=1 --baseline base.json --max-regression 5% --format markdown
expect 1 analyze dynamic_batch.onnx --dim batch=64 --baseline base.json --max-regression 5% --format markdown -o gate.md
size=$(wc -c < gate.md 2>/dev/null || echo 0)
if [ "$size" -eq 0 ] || [ "$size" -ge 60000 ]; then echo "FAIL: gate markdown is $size characters (limit 60,000)" >&2; fails=$((fails + 1)); fi

# a search loop through the library
expect 0 python - <<'EOF'
import analyzer, onnx
cm = analyzer.CostModel(["a100"], runtime="kernel")
m = onnx.load("mlp.onnx")
lat = cm.score([m, m])
assert lat.shape[0] == 2 and (lat > 0).all(), lat
print(lat)
EOF

rm -rf "$WORK"
if [ "$fails" -ne 0 ]; then echo "user stories: $fails failed" >&2; exit 1; fi
echo "user stories: all passed"
