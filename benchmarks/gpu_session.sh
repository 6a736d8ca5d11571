#!/usr/bin/env bash
# Every GPU figure of docs/scaling.md, docs/vela.md and docs/caption_metrics.md in one call, for a GPU lent for
# a few minutes (issue 39: "keep it busy").
#
#   bash benchmarks/gpu_session.sh OUT_DIR [PHASE ...]     # on the GPU machine
#   TINY=1 bash benchmarks/gpu_session.sh /tmp/gpu         # CPU rehearsal with tiny shapes (no timing meaning)
#
# Phases, in this order (default: all): caption (CLIP-S and PAC-S ViT-B/32 over 2,048 items, Polos over 512,
# each checked against its one-batch-at-a-time path, which is timed beside as the baseline, and profiled),
# vela (batch 96, the CLIP branch checked against the sequential path and against CLIP inputs prepared one
# batch at a time, profile), qwen2_vl (one process: the dense-forward bound, the naive loop over 32 samples,
# ours over 256 then 2,048 more samples, a profile of 96), qwen2_5_vl (the same without the long run),
# compile (Qwen2-VL-7B with regional torch.compile, in whatever time is left).
#
# Each phase runs under a time limit, cut to what is left of SESSION_SECONDS (default 540) so one slow phase
# cannot eat the later ones. Wheels in .whl/ (transformers 5.24, ftfy, OpenAI's BPE via open_clip_torch) are
# installed to /tmp/site first; if that transformers does not import, the machine's own is used. Output, at
# most 8 files: OUT_DIR/session.log (everything), one JSON per phase, dmon.txt (nvidia-smi's utilisation each
# second over the whole session).
set -u
out=${1:-/tmp/gpu}
shift || true
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
unset TOKENIZERS_PARALLELISM # tokenising on every core is part of what is measured (nothing here forks)
log="$out/session.log"
py=${PYTHON:-python3}
budget=${SESSION_SECONDS:-540}
started=$(date +%s)

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    >>"$log" 2>&1 && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
  if ! "$py" -c "import transformers" >>"$log" 2>&1; then
    echo "carried transformers does not import: using the machine's own" | tee -a "$log"
    export PYTHONPATH=${PYTHONPATH#/tmp/site}
  fi
fi

dmon_pid=
if [ "${TINY:-0}" != 1 ] && command -v nvidia-smi >/dev/null; then
  nvidia-smi dmon -s u -d 1 >"$out/dmon.txt" 2>&1 &
  dmon_pid=$!
fi

run() { # name limit_s args...
  local name=$1 limit=$2 left
  shift 2
  [ "${TINY:-0}" = 1 ] && limit=$((limit * 6)) # a shared CPU runs the rehearsal: its limits only catch hangs
  left=$((budget - ($(date +%s) - started)))
  if [ "$left" -lt 20 ]; then
    echo "=== $name SKIPPED: ${left}s left of ${budget}s" | tee -a "$log"
    return
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "=== $name (limit ${limit}s, $(date +%T))" | tee -a "$log"
  timeout "$limit" "$py" "$@" >>"$log" 2>&1
  echo "=== $name rc=$? ($(date +%T), $(($(date +%s) - started))s into the session)" | tee -a "$log"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>/dev/null ||
    echo "no nvidia-smi"
  "$py" -c "import os, torch, transformers, tokenizers; print('torch', torch.__version__, 'transformers', \
transformers.__version__, 'tokenizers', tokenizers.__version__, 'cores', os.cpu_count())"
} 2>&1 | tee -a "$log"

if [ "${TINY:-0}" = 1 ]; then
  caption=(--n 16 --check-sequential 8 --profile 8) polos=(--n 8 --check-sequential 4)
  vela=(--tiny --n 8) judge=(--tiny --n 4 --naive-n 2 --warmup 4 --profile 2) steady=8
else
  caption=(--device cuda --full-size --n 2048 --check-sequential 512 --profile 256)
  polos=(--device cuda --full-size --n 512 --check-sequential 256)
  vela=(--n 1024) judge=(--n 256 --naive-n 32 --warmup 64 --profile 96) steady=2048
fi

for phase in ${@:-caption vela qwen2_vl qwen2_5_vl compile}; do
  case $phase in
    caption)
      run caption 80 benchmarks/caption_metrics_throughput.py "${caption[@]}" --only clip_score pac_s_vitb32:pac_s \
        --json "$out/caption.json"
      run polos 60 benchmarks/caption_metrics_throughput.py "${polos[@]}" --only polos --json "$out/polos.json"
      ;;
    vela)
      run vela 90 benchmarks/vela_throughput.py "${vela[@]}" --skip-judges --batch-sizes 96 --check-overlap --profile \
        --json "$out/vela.json"
      ;;
    qwen2_vl)
      run qwen2_vl 210 benchmarks/judge_throughput.py "${judge[@]}" --shape qwen2_vl_7b --bound --steady $steady \
        --json "$out/qwen2_vl.json"
      ;;
    qwen2_5_vl)
      run qwen2_5_vl 110 benchmarks/judge_throughput.py "${judge[@]}" --shape qwen2_5_vl_7b --bound \
        --json "$out/qwen2_5_vl.json"
      ;;
    compile)
      run compile 200 benchmarks/judge_throughput.py "${judge[@]}" --shape qwen2_vl_7b --naive-n 0 --compile --bound \
        --json "$out/compile.json"
      ;;
    *) echo "unknown phase $phase" | tee -a "$log" ;;
  esac
done
[ -n "$dmon_pid" ] && kill "$dmon_pid" 2>/dev/null
grep -E "^===|samples/s|ratio|naive|steady|bound|max \|diff\||busy|syncs|waiting|SKIP|Error|error|Traceback" "$log" |
  tail -n 90
