#!/usr/bin/env bash
# w4counts.sh KBROKER OUTDIR [RECORDS]: three brokers of KBROKER started as
# the suite starts them, one w4 load (e2e, 5,000 records/s, 12 partitions,
# RF=3, 1 KiB, idempotent acks=all, linger 0), and per produced record the
# three brokers' CPU time, read-like and write-like system calls
# (/proc/PID/io syscr, syscw) and context switches (/proc/PID/status),
# counted around the whole second load command (its 1,000 warm-up records
# included, and divided by them too), after a first load on another topic.
set -euo pipefail
KB=$1; OUT=$2; RECORDS=${3:-50000}
KBENCH=${KBENCH:-$(dirname "$0")/../../../bin/kbench}
mkdir -p "$OUT"; DIR=$(mktemp -d /tmp/w4counts.XXXX)
base=$((20000 + RANDOM % 20000))
voters="1@127.0.0.1:$((base+1)),2@127.0.0.1:$((base+11)),3@127.0.0.1:$((base+21))"
pids=()
for i in 1 2 3; do
  p=$((base + 10*(i-1)))
  "$KB" serve --node.id=$i --listeners=PLAINTEXT://127.0.0.1:$p,CONTROLLER://127.0.0.1:$((p+1)) \
    --controller.listener.names=CONTROLLER --controller.quorum.voters=$voters \
    --log.dirs=$DIR/node-$i --metrics.listen=127.0.0.1:$((p+3)) --log.level=warn >"$DIR/node-$i.log" 2>&1 &
  pids+=($!)
done
trap 'kill ${pids[*]} 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"' EXIT
seeds="127.0.0.1:$base,127.0.0.1:$((base+10)),127.0.0.1:$((base+20))"
for _ in $(seq 1 300); do
  (exec 3<>/dev/tcp/127.0.0.1/$base) 2>/dev/null && (exec 3<>/dev/tcp/127.0.0.1/$((base+20))) 2>/dev/null && break
  sleep 0.2
done
sleep 3 # the brokers register and unfence
sample() { # cpu_ticks syscr syscw vol nonvol, summed over the brokers
  local c=0 r=0 w=0 v=0 n=0
  for p in "${pids[@]}"; do
    read -r ut st < <(awk '{print $14, $15}' /proc/$p/stat)
    c=$((c+ut+st))
    r=$((r+$(awk '/^syscr/{print $2}' /proc/$p/io))); w=$((w+$(awk '/^syscw/{print $2}' /proc/$p/io)))
    v=$((v+$(cat /proc/$p/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/{s+=$2} END{print s+0}')))
    n=$((n+$(cat /proc/$p/task/*/status 2>/dev/null | awk '/^nonvoluntary_ctxt/{s+=$2} END{print s+0}')))
  done
  echo "$c $r $w $v $n $(reqs Produce) $(reqs Fetch)"
}
reqs() { # requests of one API handled by the three brokers (kbroker_requests_total)
  local t=0
  for i in 0 10 20; do
    t=$((t+$(curl -s http://127.0.0.1:$((base+i+3))/metrics | awk -v api="$1" '$1 ~ "^kbroker_requests_total\\{api=\""api"\"" {s+=$2} END{printf "%d", s}')))
  done
  echo $t
}
warm=$((RECORDS/5))
# Warm-up load on its own topic (the first seconds of a new cluster), then the counted one.
"$KBENCH" load --brokers=$seeds --topic=w4warm --partitions=12 --replication-factor=3 --record-bytes=1024 \
  --acks=all --idempotent --linger=0 --rate=5000 --mode=e2e --records=$warm --warm-records=1000 >"$OUT/warm.txt" 2>&1
s0=$(sample); l0=$(cut -d' ' -f1-3 /proc/loadavg)
"$KBENCH" load --brokers=$seeds --topic=w4 --partitions=12 --replication-factor=3 --record-bytes=1024 \
  --acks=all --idempotent --linger=0 --rate=5000 --mode=e2e --records=$RECORDS --warm-records=1000 --keep-topic >"$OUT/load.txt" 2>&1
s1=$(sample); l1=$(cut -d' ' -f1-3 /proc/loadavg)
hz=$(getconf CLK_TCK); n=$((RECORDS+1000))
read -r c0 r0 w0 v0 x0 p0 f0 <<<"$s0"; read -r c1 r1 w1 v1 x1 p1 f1 <<<"$s1"
awk -v c=$((c1-c0)) -v r=$((r1-r0)) -v w=$((w1-w0)) -v v=$((v1-v0)) -v x=$((x1-x0)) -v p=$((p1-p0)) -v f=$((f1-f0)) -v n=$n -v hz=$hz -v kb="$KB" -v l0="$l0" -v l1="$l1" 'BEGIN{
  printf "%s: %d records in %d produce requests (%.2f per request), %.2f fetch requests per produce request (load %s -> %s)\n", kb, n, p, n/p, f/p, l0, l1
  printf "  per record, three brokers: CPU %.1f us, read-like syscalls %.2f, write-like %.2f, voluntary ctx switches %.2f, involuntary %.2f\n", c*1e6/hz/n, r/n, w/n, v/n, x/n
  printf "  per produce request: CPU %.1f us, read-like syscalls %.2f, write-like %.2f, voluntary ctx switches %.2f\n", c*1e6/hz/p, r/p, w/p, v/p}' | tee "$OUT/counts.txt"
grep -E "e2e|ack" "$OUT/load.txt" | tail -2 || true
