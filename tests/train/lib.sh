# What the shell-script tests of tests/train/ share; source it first thing. It exports the MPI
# settings of a root run on a small machine (one thread per rank), makes $tmp (removed on exit),
# and defines:
#   words FILE SEED COUNT WORD...   writes COUNT of the words, chosen by Python's random.Random(SEED),
#                             separated by spaces, to FILE
#   identical NAME DIR_A DIR_B   compares two checkpoint folders' model.safetensors and
#                             train_state.safetensors byte for byte, printing each verdict; a
#                             difference sets status=1
#   same NAME "loss A" "loss B"   prints the two losses and their relative difference; a difference
#                             above 1e-5 sets status=1 (the script ends with `exit $status`)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0

words() {
  local file=$1 seed=$2 count=$3
  shift 3
  /usr/bin/python3 - "$file" "$seed" "$count" "$@" <<'PY'
import random, sys
r = random.Random(int(sys.argv[2]))
open(sys.argv[1], "w").write(" ".join(r.choice(sys.argv[4:]) for _ in range(int(sys.argv[3]))))
PY
}

same() {
  /usr/bin/python3 - "$1" "$2" "$3" <<'PY' || status=1
import sys
name, a, b = sys.argv[1], float(sys.argv[2].split()[1]), float(sys.argv[3].split()[1])
e = abs(a - b) / abs(b)
print(f"{name}: {a:.10g} vs {b:.10g}, relative difference {e:.2e}")
sys.exit(0 if e <= 1e-5 else 1)
PY
}

identical() {
  local f
  for f in model.safetensors train_state.safetensors; do
    if cmp -s "$2/$f" "$3/$f"; then
      echo "$1: identical $(basename "$2")/$f"
    else
      echo "$1: DIFFERENT $(basename "$2")/$f"; status=1
    fi
  done
}
