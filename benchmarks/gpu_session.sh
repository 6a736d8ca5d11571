#!/usr/bin/env bash
# Every GPU figure of docs/scaling.md and docs/vela.md in one call, for a GPU lent for a few minutes.
#
#   bash benchmarks/gpu_session.sh OUT_DIR [PHASE ...]     # on the GPU machine
#   TINY=1 bash benchmarks/gpu_session.sh /tmp/gpu judges  # CPU rehearsal with tiny shapes (no timing meaning)
#
# Phases (default: judges vela new; compile on request): judges (Qwen2-VL-7B with a profile, packed vision attention
# against the per-image path and a steady-state rerun over 8x the samples; Qwen2.5-VL-7B with the same A/B;
# LLaVA-1.5-7B with a profile), steady (Qwen2-VL-7B over 256 then 2,048 more samples), compile (Qwen2-VL-7B with regional torch.compile), vela
# (batch 64/96, CLIP stream checked against the sequential path, profile), new (the newer metrics beside
# CLIP-S). Each phase has a time limit, so one slow phase cannot eat the others' time. Output: OUT_DIR/session.log
# (everything) and one JSON summary per judge phase.
set -u
out=${1:-/tmp/gpu}
shift || true
mkdir -p "$out"
export PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
log="$out/session.log"
tiny=()
n=256
if [ "${TINY:-0}" = 1 ]; then tiny=(--tiny); n=4; fi

run() { # name limit_s args...
  local name=$1 limit=$2
  shift 2
  echo "=== $name (limit ${limit}s, $(date +%T))" | tee -a "$log"
  timeout "$limit" "${PYTHON:-python3}" "$@" >>"$log" 2>&1
  echo "=== $name rc=$? ($(date +%T))" | tee -a "$log"
}

{
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null || echo "no nvidia-smi"
  "${PYTHON:-python3}" -c "import torch, transformers; print('torch', torch.__version__, 'transformers', transformers.__version__)"
} | tee -a "$log"

for phase in ${@:-judges vela new}; do
  case $phase in
    judges)
      run qwen2_vl 200 benchmarks/judge_throughput.py "${tiny[@]}" --shape qwen2_vl_7b --n $n --profile 32 --ab-packed --steady $((n * 8)) --json "$out/qwen2_vl.json"
      run qwen2_5_vl 90 benchmarks/judge_throughput.py "${tiny[@]}" --shape qwen2_5_vl_7b --n $n --ab-packed --json "$out/qwen2_5_vl.json"
      run llava 90 benchmarks/judge_throughput.py "${tiny[@]}" --shape llava_15_7b --n $n --profile 16 --json "$out/llava.json"
      ;;
    steady)
      run steady 200 benchmarks/judge_throughput.py "${tiny[@]}" --shape qwen2_vl_7b --n $n --steady $((n * 8)) --json "$out/steady.json"
      ;;
    compile)
      run compile 110 benchmarks/judge_throughput.py "${tiny[@]}" --shape qwen2_vl_7b --n $n --compile --json "$out/compile.json"
      ;;
    vela)
      run vela 90 benchmarks/vela_throughput.py "${tiny[@]}" --skip-judges --batch-sizes 64,96 --n $((n * 4)) --check-overlap --profile
      ;;
    new)
      run new 100 benchmarks/caption_metrics_throughput.py $([ "${TINY:-0}" = 1 ] && echo --n 16 || echo --device cuda --full-size)
      ;;
    *) echo "unknown phase $phase" | tee -a "$log" ;;
  esac
done
grep -E "^===|samples/s|ratio|naive|steady|max \|diff\||busy|SKIP|Error|error" "$log" | tail -n 80
