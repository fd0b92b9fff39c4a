#!/usr/bin/env bash
# The memory check in a real memory cgroup, as Slurm's task/cgroup or a container sets one: a child
# of this process's own memory cgroup (v1's memory controller, or v2 where the controller is enabled
# for children) with a 2 GiB limit. A run whose step needs more is refused in one sentence naming
# its need (not killed by the kernel: exit 137); a run that fits completes; and the check's need
# (the step on the meta device plus what the process holds, printed by OPTIMUS_MEMORY_REPORT) is
# within 10% of the peak resident memory the kernel measures (/usr/bin/time's maximum resident set
# size, per rank) for tiny, small, a 2D run on 4 ranks and a 3D run on 8: at most 5% under it (the
# OpenBLAS and allocator pages touched after the check, about 1%, and on some runs MPI's buffers on
# rank 0 of the 3D run, 3% more) and at most 10% over. Prints the table.
# Skipped (exit 77) where no memory cgroup can be made. Usage: run_memory_cgroup.sh OPTIMUS MPIEXEC
set -uo pipefail
optimus=$1 mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMPI_MCA_pml=ob1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
tmp=$(mktemp -d)
group=""
cleanup() {
  # The group goes once its processes have (a singleton's MPI daemon may still be ending): wait up to 20 s.
  local tries=0
  while [[ -n "$group" && -d "$group" ]] && ((tries++ < 100)); do
    [[ -s "$group/cgroup.procs" ]] || rmdir "$group" 2>/dev/null || true
    if [[ -d "$group" ]]; then sleep 0.2; fi
  done
  if [[ -n "$group" && -d "$group" ]]; then echo "could not remove $group"; fi
  rm -rf "$tmp"
}
trap cleanup EXIT
trap "exit 1" INT TERM
fail() {
  echo "FAIL: $*"
  exit 1
}
skip() {
  echo "SKIP: $*"
  exit 77
}

# ---- a child of this process's memory cgroup, limited to 2 GiB ----------------------------------------
limit=$((2 * 1024 * 1024 * 1024))
v1=$(sed -n 's/^[0-9]*:\([^:]*,\)\{0,1\}memory\(,[^:]*\)\{0,1\}:\(.*\)$/\3/p' /proc/self/cgroup | head -1)
v2=$(sed -n 's/^0::\(.*\)$/\1/p' /proc/self/cgroup | head -1)
if [[ -n "$v1" && -d /sys/fs/cgroup/memory ]]; then
  group=/sys/fs/cgroup/memory${v1%/}/optimus_memory_check_$$
  mkdir "$group" 2>/dev/null || { group=""; skip "cannot make a memory cgroup under /sys/fs/cgroup/memory$v1"; }
  echo "$limit" >"$group/memory.limit_in_bytes" 2>/dev/null || skip "cannot set $group/memory.limit_in_bytes"
elif [[ -n "$v2" && -f /sys/fs/cgroup/cgroup.controllers ]]; then
  group=/sys/fs/cgroup${v2%/}/optimus_memory_check_$$
  mkdir "$group" 2>/dev/null || { group=""; skip "cannot make a cgroup under /sys/fs/cgroup$v2"; }
  echo "$limit" >"$group/memory.max" 2>/dev/null || skip "no memory controller in $group (cgroup.subtree_control)"
else
  skip "no memory cgroup in /proc/self/cgroup"
fi
echo "a memory cgroup of 2 GiB: $group"
# in_group COMMAND...: COMMAND as a process of the limited group (the shell moves itself, then execs).
# shellcheck disable=SC2016  # $1 and $@ are the inner bash's
in_group=(bash -c 'echo $$ >"$1/cgroup.procs" && shift && exec "$@"' _ "$group")

yes 'the grid sums a row, then a column, then the ranks agree.' | head -c 2000000 >"$tmp/text.txt"
quiet=(--eval-batches 1 --progress lines --log-interval 0 --data "$tmp/text.txt")

# ---- refused: a step of 3.6 GiB (without the check, the kernel kills it with no word: exit 137) ------
echo "\$ optimus train --layers 1 --embd 32 --heads 2 --seq 64 --batch 8000 ... (in the 2 GiB cgroup)"
"${in_group[@]}" "$optimus" train --layers 1 --embd 32 --heads 2 --seq 64 --batch 8000 --steps 2 "${quiet[@]}" \
  --out "$tmp/refused" >"$tmp/out" 2>&1
rc=$?
cat "$tmp/out"
echo "(exit code $rc)"
((rc != 0)) || fail "the run that cannot fit exited 0"
((rc != 137)) || fail "the run was killed by the kernel (exit 137) instead of refused"
(($(grep -c 'error:' "$tmp/out") == 1)) || fail "not exactly one error: line"
grep -q "error: training this model at --batch 8000 needs .* more per process for its training step" "$tmp/out" ||
  fail "the error does not name the step's need"
grep -q "under the memory limit of cgroup .*optimus_memory_check_$$ (memory\.\(limit_in_bytes\|max\))" "$tmp/out" ||
  fail "the error does not name the cgroup's limit"

# ---- fits: the same model at --seq 16 --batch 800 trains in the cgroup and completes --------------------
echo "\$ optimus train --layers 1 --embd 32 --heads 2 --seq 16 --batch 800 ... (in the 2 GiB cgroup)"
"${in_group[@]}" "$optimus" train --layers 1 --embd 32 --heads 2 --seq 16 --batch 800 --steps 2 "${quiet[@]}" \
  --out "$tmp/fits" >"$tmp/out" 2>&1 || {
  cat "$tmp/out"
  fail "the run that fits failed (exit code $?)"
}
cat "$tmp/out"
grep -q "checkpoint saved to $tmp/fits/step_000002" "$tmp/out" || fail "the run that fits did not finish"

# ---- the need against the measured peak, per rank ------------------------------------------------------
# measure NAME RANKS COMMAND...: runs optimus COMMAND on RANKS processes (outside the small group: 8
# ranks hold more than 2 GiB together), each under /usr/bin/time, and prints one row per rank.
printf '%-6s %4s %12s %14s %7s\n' case rank "need (MiB)" "peak RSS (MiB)" "ratio" | tee "$tmp/table"
measure() {
  local name=$1 ranks=$2
  shift 2
  rm -f "$tmp"/rss.* "$tmp"/check.*
  # shellcheck disable=SC2016  # the inner bash's variables
  local each=(bash -c 'r=${OMPI_COMM_WORLD_RANK:-0}; exec /usr/bin/time -f %M -o "$0/rss.$r" "$@" 2>"$0/check.$r"'
    "$tmp" "$optimus")
  if ((ranks == 1)); then
    OPTIMUS_MEMORY_REPORT=1 "${each[@]}" "$@" >/dev/null || fail "$name: optimus $* failed: $(cat "$tmp/check.0")"
  else
    OPTIMUS_MEMORY_REPORT=1 "$mpiexec" -np "$ranks" "${each[@]}" "$@" >/dev/null ||
      fail "$name: optimus $* on $ranks ranks failed: $(cat "$tmp"/check.*)"
  fi
  local r need peak
  for ((r = 0; r < ranks; ++r)); do
    need=$(sed -n 's/^memory check: rank [0-9]* of [0-9]*: .* = \([0-9.]*\) MiB;.*/\1/p' "$tmp/check.$r")
    [[ -n "$need" ]] || fail "$name: rank $r printed no memory check line: $(cat "$tmp/check.$r")"
    peak=$(awk '{ printf "%.1f", $1 / 1024 }' "$tmp/rss.$r")
    awk -v n="$name" -v r="$r" -v need="$need" -v peak="$peak" \
      'BEGIN { printf "%-6s %4d %12.1f %14.1f %7.3f\n", n, r, need, peak, need / peak }' | tee -a "$tmp/table"
  done
}
measure tiny 1 bench --model tiny --steps 1 --warmup 0
measure small 1 bench --model small --batch 4 --steps 1 --warmup 0
measure 2d 4 bench --layout 2d --model tiny --batch 32 --steps 1 --warmup 0
measure 3d 8 train --layout 3d --layers 1 --embd 32 --heads 2 --seq 16 --batch 4000 --steps 2 "${quiet[@]}" \
  --out "$tmp/3d"
awk 'NR > 1 && ($5 < 0.95 || $5 > 1.10) { bad = bad sprintf("\n  %s rank %s: need %s MiB, peak %s MiB", $1, $2, $3, $4) }
     END { if (bad != "") { print "FAIL: the need is not within [0.95, 1.10] of the peak:" bad; exit 1 } }' "$tmp/table" ||
  exit 1
echo "PASS"
