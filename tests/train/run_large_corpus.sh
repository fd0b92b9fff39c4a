#!/usr/bin/env bash
# Memory does not grow with the corpus: the same 2D run on 4 ranks trains on a 20 MiB text file and
# on a 2 GiB one (sparse: the 20 MiB text at its start and inside its validation tail, zeros between,
# so it takes no disk), then on token files of 20 MiB and 2 GiB (uint16 ids, the large one sparse
# after its first 512 MiB); the largest peak resident memory of any rank (GNU time's %M) on each large
# corpus is within 10 % of the small one's. The data files are memory-mapped, so a rank holds only
# the pages its windows touch; a file read whole into memory would need the 2 GiB on each rank.
# Usage: run_large_corpus.sh OPTIMUS MPIEXEC
set -uo pipefail
optimus=$1 mpiexec=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'pkill -KILL -f -- "$tmp" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}
[[ -x /usr/bin/time ]] || fail "/usr/bin/time (Debian's package time) is needed to measure peak memory"

/usr/bin/python3 -c "
import random
r = random.Random(23)
words = ['the', 'tensor', 'grid', 'of', 'ranks', 'sums', 'a', 'block', 'row', 'column', 'and', 'broadcast']
text = ' '.join(r.choice(words) for _ in range(400000)).encode()
with open('$tmp/small.txt', 'wb') as f:
    while f.tell() < 20 << 20:
        f.write(text)
    f.truncate(20 << 20)"
truncate -s 2G "$tmp/large.txt"
dd if="$tmp/small.txt" of="$tmp/large.txt" bs=1M conv=notrunc status=none
dd if="$tmp/small.txt" of="$tmp/large.txt" bs=1M seek=1900 conv=notrunc status=none  # in the last 10 %
# Token files (text/token_file.h): a 64-byte header, then uint16 ids below the vocabulary of 1000,
# random; the large one's first 512 MiB are written and the rest is a hole. Pages read from a file
# just written come in large page-cache folios, which a read fault maps whole (up to 2 MiB): the
# written part is what shows whether a rank lets the windows it has read stay mapped.
/usr/bin/python3 -c "
import numpy as np, struct
r = np.random.default_rng(5)
for name, size, written in [('small', 20 << 20, 20 << 20), ('large', 2 << 30, 512 << 20)]:
    n = (size - 64) // 2
    with open('$tmp/' + name + '.tok', 'wb') as f:
        f.write(b'OPTMTOKN' + struct.pack('<IIQQI', 1, 2, n, 3 * n, 1000).ljust(56, b'\0'))
        for _ in range(written >> 24):
            f.write(r.integers(0, 1000, 1 << 23, dtype='<u2').tobytes())
        f.truncate(64 + 2 * n)"

# peak_kib FILE: trains on $tmp/FILE and prints the largest peak RSS of the 4 ranks, in KiB.
peak_kib() {
  "$mpiexec" -np 4 -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 \
    sh -c '/usr/bin/time -f %M -o "$0.rss.$OMPI_COMM_WORLD_RANK" "$@"' "$tmp/$1" \
    "$optimus" train --layout 2d --layers 2 --embd 64 --heads 4 --seq 64 --batch 8 --steps 100 --eval-batches 4 \
    --log-interval 0 --progress lines --data "$tmp/$1" --out "$tmp/run_$1" >"$tmp/$1.log" 2>&1 ||
    { cat "$tmp/$1.log"; fail "training on $1 failed"; }
  cat "$tmp/$1.rss."* | sort -n | tail -1
}
for kind in txt tok; do
  small=$(peak_kib "small.$kind") large=$(peak_kib "large.$kind")
  grep -h "^training" "$tmp/small.$kind.log" "$tmp/large.$kind.log"
  /usr/bin/python3 -c "
import sys
small, large = $small, $large
ratio = large / small
print(f'peak RSS of the busiest rank: {small / 1024:.1f} MiB on 20 MiB of $kind, {large / 1024:.1f} MiB on 2 GiB '
      f'(ratio {ratio:.3f}, allowed 0.9 to 1.1)')
sys.exit(0 if 0.9 <= ratio <= 1.1 else 1)" || fail "peak memory depends on the corpus size"
done
echo "PASS: memory per rank does not grow with the corpus"
