#!/usr/bin/env bash
# A rank that throws inside a stage call ends the whole job (label mpi): 4 ranks run the hidden
# "[fault]" test of test_gpu_stages over a CPU context standing in for the GPU, where rank 1 alone
# passes a batch the 2D stage refuses while the other ranks go on into its collectives. Checks:
# a non-zero exit, well inside the 60 s the job is given (no rank left waiting), and exactly one
# "error:" line, from rank 1, naming the refusal.
# Usage: run_fault.sh MPIEXEC TEST_GPU_STAGES
set -uo pipefail
mpiexec=$1 program=$2
log=$(mktemp)
trap 'rm -f "$log"' EXIT
begin=$(date +%s)
timeout 60 "$mpiexec" --allow-run-as-root --oversubscribe -np 4 "$program" --cpu-stand-in "[fault]" >"$log" 2>&1
rc=$?
seconds=$(($(date +%s) - begin))
errors=$(grep -c "error:" "$log")
echo "exit code $rc after $seconds s; $errors error line(s):"
grep "error:" "$log"
status=0
if ((rc == 0)); then echo "FAILED: the job exited 0"; status=1; fi
if ((rc == 124)); then echo "FAILED: the job hung until the 60 s timeout"; status=1; fi
if ((seconds > 30)); then echo "FAILED: the job took $seconds s to end"; status=1; fi
if ((errors != 1)); then echo "FAILED: expected exactly one error line"; status=1; fi
if ! grep -q "rank 1: error: a collective call failed on this rank alone: .*not divisible by 2" "$log"; then
  echo "FAILED: the error line is not rank 1's refusal of the batch"; status=1
fi
((status == 0)) || { echo "--- the job's output:"; cat "$log"; }
exit $status
