#!/usr/bin/env bash
# Hugging Face checkpoints in and out, on tiny random directories (make_tiny_hf.py: Llama with llama3
# RoPE scaling in BF16, Qwen 3 sharded F32 with tied embeddings and YaRN, OLMo 2 in F16, OLMo 3 with
# sliding layers and YaRN on its full layers):
#   per family: import_hf → dump_logits → compare_hf.py (the PyTorch reference on the same files,
#   read by its own reader, within 10x the fp32 noise floor) → export_hf → import_hf again → the two
#   checkpoints identical bit for bit (every tensor, every [model] key); for BF16 sources also
#   through export_hf --dtype bf16;
#   OLMo 3 and Qwen 3 under mpirun -np 2 --parallel.tp 2: the checkpoint identical to the tp = 1 one;
#   refusals: a bias tensor, hidden_act gelu, rope_scaling dynamic, a missing tensor, a truncated
#   safetensors file, a tied directory whose stored lm_head.weight differs from the embedding, each
#   naming the key or file; export of a model no family expresses; a tied directory that stores an
#   equal lm_head.weight imports as the one without it.
# usage: test_hf.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_hf.XXXXXX); trap 'rm -rf "$WORK"' EXIT
source "$SRC/validation/mpi/common.sh"
HF=$SRC/validation/hf

"$PY" "$HF/make_tiny_hf.py" "$WORK/hf" >/dev/null || { echo "make_tiny_hf.py failed"; exit 1; }

family() {  # family NAME: import, logits against the reference, export, import again, identical
  local n=$1
  "$BIN/import_hf" --hf "$WORK/hf/$n" --out "$WORK/runs/$n" >"$WORK/$n.import.log" 2>&1 \
    || { cat "$WORK/$n.import.log"; return 1; }
  "$BIN/dump_logits" "$WORK/runs/$n" "$WORK/$n.logits.h5" 2 24 7 >/dev/null || return 1
  "$PY" "$HF/compare_hf.py" "$WORK/hf/$n" "$WORK/$n.logits.h5" || return 1
  "$BIN/export_hf" --init "$WORK/runs/$n" --out "$WORK/export/$n" >/dev/null || return 1
  "$BIN/import_hf" --hf "$WORK/export/$n" --out "$WORK/runs/$n.again" >/dev/null || return 1
  "$PY" "$HF/same_checkpoint.py" "$WORK/runs/$n/checkpoints/step_00000000.h5" \
    "$WORK/runs/$n.again/checkpoints/step_00000000.h5" || return 1
  # Weights that came in as BF16 go out as BF16 without a change (round to nearest even of a BF16
  # value is itself).
  [[ $n == llama || $n == olmo3 ]] || return 0  # make_tiny_hf.py's BF16 directories
  "$BIN/export_hf" --init "$WORK/runs/$n" --out "$WORK/export/$n.bf16" --dtype bf16 >/dev/null || return 1
  "$BIN/import_hf" --hf "$WORK/export/$n.bf16" --out "$WORK/runs/$n.bf16" >/dev/null || return 1
  "$PY" "$HF/same_checkpoint.py" "$WORK/runs/$n/checkpoints/step_00000000.h5" \
    "$WORK/runs/$n.bf16/checkpoints/step_00000000.h5"
}
for n in llama qwen3 olmo2 olmo3; do check "$n" family "$n"; done
# OLMo 2's directory stores a rotary_emb.inv_freq buffer: skipped, and said so in the run's log.
check "olmo2 inv_freq skipped" grep -qF "1 rotary_emb.inv_freq buffers ignored" "$WORK/runs/olmo2/log.txt"

tp2() {  # tp2 NAME: the directory converted by two ranks, each holding its slice
  local n=$1
  mpirun -np 2 "$BIN/import_hf" --hf "$WORK/hf/$n" --out "$WORK/runs/$n.tp2" --parallel.tp 2 \
    >"$WORK/$n.tp2.log" 2>&1 || { cat "$WORK/$n.tp2.log"; return 1; }
  "$PY" "$HF/same_checkpoint.py" "$WORK/runs/$n/checkpoints/step_00000000.h5" \
    "$WORK/runs/$n.tp2/checkpoints/step_00000000.h5"
}
# OLMo 3: GQA split by rows and columns, layer QK norm split with its heads; Qwen 3: a head QK norm
# replicated on every rank, tied embeddings, weights from two shard files.
check "olmo3 tp 2" tp2 olmo3
check "qwen3 tp 2" tp2 qwen3

refused() {  # refused CASE TEXT...: import_hf fails, names each TEXT, writes no checkpoint
  local n=$1; shift
  if "$BIN/import_hf" --hf "$WORK/hf/$n" --out "$WORK/runs/$n" >"$WORK/$n.log" 2>&1; then
    echo "$n: import_hf accepted it"; return 1
  fi
  for t in "$@"; do
    grep -qF -- "$t" "$WORK/$n.log" || { echo "$n: message lacks '$t':"; cat "$WORK/$n.log"; return 1; }
  done
  [[ ! -e $WORK/runs/$n/checkpoints ]] || { echo "$n: left checkpoints behind"; return 1; }
  echo "$n refused: $(grep -m1 error "$WORK/$n.log")"
}
check bias refused bad_bias "model.layers.0.self_attn.q_proj.bias" "unexpected"
check act refused bad_act "hidden_act = \"gelu\"" "config.json"
check rope refused bad_rope "rope_type = \"dynamic\""
check missing refused bad_missing "model.layers.1.mlp.up_proj.weight" "missing"
check truncated refused bad_trunc "model.safetensors" "truncated"
check "tied head differs" refused bad_tied_head "lm_head.weight" "tie_word_embeddings" "[3, 5]"
tied_copy() {  # a tied directory that stores the embedding twice imports as the tied one does
  "$BIN/import_hf" --hf "$WORK/hf/qwen3_head_copy" --out "$WORK/runs/qwen3_head_copy" >"$WORK/qwen3_head_copy.log" 2>&1 ||
    { cat "$WORK/qwen3_head_copy.log"; return 1; }
  grep -qF "lm_head.weight ignored" "$WORK/runs/qwen3_head_copy/log.txt" || { echo "no note in its log"; return 1; }
  "$PY" "$HF/same_checkpoint.py" "$WORK/runs/qwen3/checkpoints/step_00000000.h5" \
    "$WORK/runs/qwen3_head_copy/checkpoints/step_00000000.h5"
}
check "tied head copy ignored" tied_copy

export_refused() {  # a checkpoint no family expresses: layer QK norm with pre-norm
  "$BIN/import_hf" --hf "$WORK/hf/olmo2" --out "$WORK/runs/olmo2.pre" >/dev/null 2>&1 || return 1
  PYTHONPATH="$SRC/validation/mpi" "$PY" - "$WORK/runs/olmo2.pre/checkpoints/step_00000000.h5" <<'EOF' || return 1
import sys, h5py, checkpoint_identity
with h5py.File(sys.argv[1], "r+") as f:
    ini = f["config"].attrs["config_ini"]
    ini = ini.decode() if isinstance(ini, bytes) else ini
    f["config"].attrs["config_ini"] = ini.replace("norm_order = post", "norm_order = pre")
    checkpoint_identity.refresh(f)
EOF
  if "$BIN/export_hf" --init "$WORK/runs/olmo2.pre" --out "$WORK/export/olmo2.pre" >"$WORK/xr.log" 2>&1; then
    echo "export_hf accepted qk_norm layer with norm_order pre"; return 1
  fi
  grep -qF "model.qk_norm = layer with model.norm_order = pre" "$WORK/xr.log" || { cat "$WORK/xr.log"; return 1; }
  [[ ! -e $WORK/export/olmo2.pre/config.json ]]
}
check "export refused" export_refused
finish
