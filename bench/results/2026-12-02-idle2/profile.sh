#!/bin/sh
# Three pprofbroker nodes (kbroker's broker package plus net/http/pprof) on
# ports of their own, 100 topics x 100 partitions RF 3, then a 20 s CPU
# profile of each idle broker SETTLE seconds after the last CreateTopics
# answered, and the brokers' utime+stime over the same window.
#   profile.sh OUTPREFIX   (run from the repository root after make build bench-tools)
set -e
out=${1:?outprefix}
SETTLE=${SETTLE:-45}
base=$(mktemp -d /tmp/idle2.XXXXXX)
VOTERS=1@127.0.0.1:39192,2@127.0.0.1:39193,3@127.0.0.1:39194
pids=""
for n in 1 2 3; do
  mkdir -p $base/node-$n
  PPROF_LISTEN=127.0.0.1:$((36059 + n)) ${PPROF_BIN:-./bin/pprofbroker} serve --node.id=$n \
    --listeners=PLAINTEXT://127.0.0.1:$((39091 + n)),CONTROLLER://127.0.0.1:$((39191 + n)) \
    --controller.listener.names=CONTROLLER --controller.quorum.voters=$VOTERS \
    --log.dirs=$base/node-$n --default.replication.factor=3 --metrics.listen=127.0.0.1:$((36159 + n)) > $base/node-$n/log 2>&1 &
  pids="$pids $!"
done
trap 'for p in $pids; do kill -TERM $p 2>/dev/null; done; wait; rm -rf $base' EXIT
B=127.0.0.1:39092,127.0.0.1:39093,127.0.0.1:39094
for i in $(seq 1 60); do ./bin/kbroker topic list --brokers $B >/dev/null 2>&1 && break; sleep 1; done
for p in $pids; do kill -0 $p; done
for t in $(seq 0 9); do
  names=""; for j in $(seq 0 9); do names="$names idle2-t$((t*10+j))"; done
  for try in $(seq 1 30); do
    ./bin/kbroker topic create $names -p 100 -r 3 --brokers $B >/dev/null 2>&1 && break
    sleep 2  # the third broker not registered yet
  done
done
echo "created $(date -u +%T); settling ${SETTLE}s"
sleep $SETTLE
cpu0=0; for p in $pids; do cpu0=$((cpu0 + $(awk '{print $14+$15}' /proc/$p/stat))); done
for n in 1 2 3; do
  curl -s -o ${out}cpu$n.pb.gz "http://127.0.0.1:$((36059 + n))/debug/pprof/profile?seconds=20" &
done
sleep 20
cpu1=0; for p in $pids; do cpu1=$((cpu1 + $(awk '{print $14+$15}' /proc/$p/stat))); done
sleep 3
for p in $pids; do echo "pid $p: $(awk "{print \$14, \$15}" /proc/$p/stat) ticks utime stime total"; done
echo "$(date -u +%T) utime+stime of the 3 brokers over 20 s: $((cpu1-cpu0)) ticks of 10 ms = $(( (cpu1-cpu0) * 5 ))/100 % of a core; load: $(cat /proc/loadavg)"
