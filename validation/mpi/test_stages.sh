#!/usr/bin/env bash
# pretrain -> extend -> sft on a toy model (inputs/models/toy_d128.ini and the toy recipes), a few
# steps each, on 1-2 ranks with changing layouts: the final checkpoint's lineage names the three
# stages with their recipes; the attention projections frozen by extend (extend_frozen.ini) are
# bit-identical before and after it while the rest trained; sft does not inherit the freeze; the
# documented two-stage YaRN recipe (two extend runs, the second --init'ed from the first) works.
# usage: test_stages.sh BIN SRC PY
BIN=$1 SRC=$2 PY=$3
WORK=$(mktemp -d -t headroom_stages.XXXXXX); [[ -n ${KEEP:-} ]] || trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/common.sh"
# A small BPE, so that the toy recipes' 128-token windows hold every synthetic task.
"$BIN/prepare" --input "$SRC/validation/data/sample_corpus/train" --output "$WORK/shards" \
  --tokenizer bpe --vocab-size 512 --val-fraction 0.1 >"$WORK/prepare.log" 2>&1 || { cat "$WORK/prepare.log"; exit 1; }
M=$SRC/inputs/models R=$SRC/inputs/recipes
data=(--data.train "$WORK/shards/train.h5" --data.val "$WORK/shards/val.h5")
printf '%s\n' '{"prompt": "What is the capital of France?", "response": "Paris."}' \
  '{"prompt": "Name a primary colour.", "response": "Red."}' >"$WORK/pairs.jsonl"

check "pretrain (dp=2)" mpirun -np 2 "$BIN/pretrain" --config "$M/toy_d128.ini" --config "$R/toy_pretrain.ini" \
  "${data[@]}" --train.steps 8 --train.checkpoint_every 0 --run-dir "$WORK/pre" >"$WORK/pre.log" 2>&1
# BLAS kernels (kernels/cpu/blas_kernels.h): on a CPU with AVX2+FMA never OpenBLAS's pre-AVX2
# fallback (this machine type gets Prescott without the re-exec); a user's OPENBLAS_CORETYPE is kept.
blas_check() {
  "$PY" - "$@" <<'PY'
import re, sys
line = next(l for l in open(sys.argv[1]) if "BLAS: " in l)
core = re.search(r", kernels (\w+)", line).group(1)
flags = next(l for l in open("/proc/cpuinfo") if l.startswith("flags")).split()
old = {"Prescott", "Katmai", "Coppermine", "Northwood", "Banias", "Atom", "Core2", "Penryn", "Dunnington",
       "Nehalem", "Sandybridge"}
if len(sys.argv) > 2:
    assert core == sys.argv[2] and f"(OPENBLAS_CORETYPE={sys.argv[2]})" in line, line
else:
    assert not ("avx2" in flags and "fma" in flags and core in old), line
print(line.strip())
PY
}
# (validation/run_across_kernels.sh runs the suite under each kernel set: then that one is expected.)
check "  ...with this CPU's BLAS kernels" blas_check "$WORK/pre/log.txt" ${OPENBLAS_CORETYPE:+"$OPENBLAS_CORETYPE"}
check "pretrain with OPENBLAS_CORETYPE=Haswell" env OPENBLAS_CORETYPE=Haswell mpirun -np 1 "$BIN/pretrain" \
  --config "$M/toy_d128.ini" --config "$R/toy_pretrain.ini" "${data[@]}" --train.steps 1 \
  --train.checkpoint_every 0 --run-dir "$WORK/haswell" >"$WORK/haswell.log" 2>&1
check "  ...keeps the user's kernels" blas_check "$WORK/haswell/log.txt" Haswell
check "extend, frozen attention (tp=2)" mpirun -np 2 "$BIN/extend" --init "$WORK/pre" \
  --config "$R/toy_extend.ini" --config "$R/extend_frozen.ini" --train.steps 6 --parallel.tp 2 \
  --run-dir "$WORK/ext" >"$WORK/ext.log" 2>&1
check "  ...on whole documents" grep -q "data: whole documents of .* concatenated (BOS-separated) into windows of 257 tokens" "$WORK/ext.log"
check "sft (1 rank) with a JSONL file" mpirun -np 1 "$BIN/sft" --init "$WORK/ext" --config "$R/toy_sft.ini" \
  --data.sft_file "$WORK/pairs.jsonl" --train.steps 6 --run-dir "$WORK/sft" >"$WORK/sft.log" 2>&1
check "  ...reads the pairs" grep -q "2 pairs from $WORK/pairs.jsonl" "$WORK/sft.log"
for s in pre ext sft; do check "$s is DONE" test -f "$WORK/$s/DONE"; done
check "lineage, frozen weights, recipes" "$PY" "$SRC/validation/mpi/check_stages.py" "$WORK"

# Two-stage YaRN: stage 2 --init'ed from stage 1.
check "yarn stage 1" mpirun -np 1 "$BIN/extend" --init "$WORK/pre" --config "$R/toy_extend_yarn_stage1.ini" \
  --train.steps 3 --run-dir "$WORK/y1" >"$WORK/y1.log" 2>&1
check "yarn stage 2" mpirun -np 1 "$BIN/extend" --init "$WORK/y1" --config "$R/toy_extend_yarn_stage2.ini" \
  --train.steps 3 --run-dir "$WORK/y2" >"$WORK/y2.log" 2>&1
check "  ...lineage pretrain, extend, extend with both factors" "$PY" - "$WORK/y2" <<'PY'
import h5py, json, sys, os
d = sys.argv[1]
with h5py.File(os.path.join(d, "checkpoints", open(os.path.join(d, "checkpoints/latest")).read().strip())) as f:
    lin = json.loads(f.attrs["lineage"])
    assert [l["stage"] for l in lin] == ["pretrain", "extend", "extend"], lin
    assert "yarn_factor = 2" in lin[1]["config"] and "seq_len = 256" in lin[1]["config"]
    assert "yarn_factor = 4" in lin[2]["config"] and "seq_len = 512" in lin[2]["config"]
    assert f["config"].attrs["rope_scaling"] == "yarn" and float(f["config"].attrs["yarn_factor"]) == 4
PY
# A refused stage: extend without --init names the flag.
mpirun -np 1 "$BIN/extend" --config "$R/toy_extend.ini" --run-dir "$WORK/noinit" >"$WORK/noinit.log" 2>&1
check "extend without --init is refused" grep -q "extend needs --init" "$WORK/noinit.log"
finish
