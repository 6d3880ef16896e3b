package main

// The partitions workload's report: medians by partition count and target,
// issue 20's goals for 10,000 partitions, what one more partition costs
// (from the smallest count to the largest), the failures with what the
// brokers held, and each repetition.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// partMetric is one row of the partitions table; get says false when the
// repetition did not reach the step that measures it.
type partMetric struct {
	name   string
	get    func(partitionRun) (float64, bool)
	format func(float64) string
}

func durOf(d time.Duration) (float64, bool) { return float64(d), d > 0 }

// perBroker is the mean over the brokers of f(held, baseline), with the
// brokers read after the idle window.
func perBroker(r partitionRun, f func(held, base procHold) float64) (float64, bool) {
	if len(r.Held) == 0 || len(r.Held) != len(r.Baseline) {
		return 0, false
	}
	var sum float64
	for i := range r.Held {
		sum += f(r.Held[i], r.Baseline[i])
	}
	return sum / float64(len(r.Held)), true
}

// largestMetric is f of the broker with the most of it, after the idle
// window.
func largestMetric(name string, f func(procHold) int64, format func(float64) string) partMetric {
	return partMetric{name, func(r partitionRun) (float64, bool) { return float64(maxHold(r.Held, f)), len(r.Held) > 0 }, format}
}

// perPartitionMetric is f's growth per partition from the empty broker,
// the mean of the brokers.
func perPartitionMetric(name string, f func(procHold) int64, format func(float64) string) partMetric {
	return partMetric{name, func(r partitionRun) (float64, bool) {
		return perBroker(r, func(h, b procHold) float64 { return float64(f(h)-f(b)) / float64(r.Partitions) })
	}, format}
}

func kib(f float64) string { return fmt.Sprintf("%.1f", f/1024) }

var (
	pmCreate  = partMetric{"create: every CreateTopics answered", func(r partitionRun) (float64, bool) { return durOf(r.Create) }, msFmt}
	pmReady   = partMetric{"ready: every partition led with a full ISR, every broker asked", func(r partitionRun) (float64, bool) { return durOf(r.Ready) }, msFmt}
	pmMeta50  = partMetric{"full Metadata p50", func(r partitionRun) (float64, bool) { return durOf(r.MetaP50) }, msFmt}
	pmMeta99  = partMetric{"full Metadata p99", func(r partitionRun) (float64, bool) { return durOf(r.MetaP99) }, msFmt}
	pmMetaKiB = partMetric{"full Metadata response, KiB", func(r partitionRun) (float64, bool) { return float64(r.MetaBytes), r.MetaBytes > 0 }, kib}
	pmIdle    = partMetric{"idle CPU, brokers together, % of one core", func(r partitionRun) (float64, bool) {
		return r.IdleCPUPercent(), r.IdleWindow > 0 && len(r.Held) > 0
	}, num2}
	pmRSS     = largestMetric("RSS (VmRSS) of the largest broker, MiB", func(h procHold) int64 { return h.RSS }, mib)
	pmAnon    = largestMetric("anon RSS of the largest broker, MiB", func(h procHold) int64 { return h.Anon }, mib)
	pmRSSPart = perPartitionMetric("RSS per partition over the empty broker, KiB (mean of brokers)", func(h procHold) int64 { return h.RSS }, kib)
	pmFDs     = largestMetric("open fds of the largest broker", func(h procHold) int64 { return int64(h.FDs) }, num)
	pmFDLimit = partMetric{"open-file limit (soft) of the brokers, smallest", func(r partitionRun) (float64, bool) {
		if len(r.Baseline) == 0 {
			return 0, false
		}
		return float64(slices.MinFunc(r.Baseline, func(a, b procHold) int { return int(a.FDLimit - b.FDLimit) }).FDLimit), true
	}, num}
	pmFDPart = perPartitionMetric("fds per partition over the empty broker (mean of brokers)", func(h procHold) int64 { return int64(h.FDs) }, num2)
	pmMaps   = largestMetric("memory maps of the largest broker", func(h procHold) int64 { return int64(h.Maps) }, num)
	pmEMFILE = partMetric{"log lines saying \"too many open files\", brokers together", func(r partitionRun) (float64, bool) {
		n := 0
		for _, k := range r.EMFILE {
			n += k
		}
		return float64(n), r.EMFILE != nil
	}, num}
	pmProduce = partMetric{"one acks=all record to every partition, all acked", func(r partitionRun) (float64, bool) { return durOf(r.ProduceAll) }, msFmt}
	pmStop    = partMetric{"restart of one broker: SIGTERM to exit", func(r partitionRun) (float64, bool) {
		return restartDur(r, func(x *restartRun) time.Duration { return x.Stop })
	}, msFmt}
	pmServing = partMetric{"restart: exec to answering Metadata", func(r partitionRun) (float64, bool) {
		return restartDur(r, func(x *restartRun) time.Duration { return x.Serving })
	}, msFmt}
	pmInSync = partMetric{"restart: exec to back in the ISR of all its partitions", func(r partitionRun) (float64, bool) {
		return restartDur(r, func(x *restartRun) time.Duration { return x.InSync })
	}, msFmt}
	pmWall = partMetric{"wall time of the repetition (start to stop)", func(r partitionRun) (float64, bool) { return durOf(r.Wall) }, msFmt}

	partMetrics = []partMetric{pmCreate, pmReady, pmMeta50, pmMeta99, pmMetaKiB, pmIdle, pmRSS, pmAnon, pmRSSPart,
		pmFDs, pmFDLimit, pmFDPart, pmMaps, pmEMFILE, pmProduce, pmStop, pmServing, pmInSync, pmWall}
)

// kbrokerOnly name the rows only kbroker targets measure (kfake writes no
// broker log and is not restarted).
var kbrokerOnly = []string{pmEMFILE.name, pmStop.name, pmServing.name, pmInSync.name}

func restartDur(r partitionRun, f func(*restartRun) time.Duration) (float64, bool) {
	if r.Restart == nil || r.Restart.InSync <= 0 {
		return 0, false
	}
	return durOf(f(r.Restart))
}

// partTargets are the targets that ran the partitions workload.
func (s *suite) partTargets() []targetKind {
	return slices.DeleteFunc(slices.Clone(s.cfg.Targets), func(t targetKind) bool { return !runsWorkload(t, "partitions") })
}

func (s *suite) partRunsOf(t targetKind, n int) []partitionRun {
	var out []partitionRun
	for _, r := range s.partRuns {
		if r.Target == t && r.Partitions == n {
			out = append(out, r)
		}
	}
	return out
}

func (s *suite) partMedian(t targetKind, n int, m partMetric) (float64, int, bool) {
	var vs []float64
	for _, r := range s.partRunsOf(t, n) {
		if v, ok := m.get(r); ok {
			vs = append(vs, v)
		}
	}
	v, ok := median(vs)
	return v, len(vs), ok
}

func (s *suite) partCell(t targetKind, n int, m partMetric) string {
	v, k, ok := s.partMedian(t, n, m)
	runs := len(s.partRunsOf(t, n))
	switch {
	case ok && k < runs:
		return fmt.Sprintf("%s (%d/%d runs)", m.format(v), k, runs)
	case ok:
		return m.format(v)
	case runs > 0 && t != kindKbroker && t != kindKbrokerB && slices.Contains(kbrokerOnly, m.name):
		return "-" // kbroker only
	case runs > 0:
		return "failed"
	}
	return "-"
}

func (s *suite) partitionsReport() {
	if len(s.partRuns) == 0 {
		return
	}
	ts, counts := s.partTargets(), s.cfg.Scale.PartitionCounts
	fmt.Fprintf(s.out, "\n## Partitions (issue 20, part 3: medians of %d repetitions, a fresh cluster each)\n\n", s.cfg.Reps)
	fmt.Fprintf(s.out, "RF %d on %d brokers, topics of %d partitions, %d full Metadata requests (every topic, the brokers in turn, timed from the request's first byte to the response's last), idle CPU over %v after ready. "+
		"kfake does not replicate: its replicas and ISR are metadata, so its ready time is its create-to-listed time under its own RF semantics, and it is one process for its three brokers (its RSS and fds are that process's). "+
		"The restart (kbroker only) is a SIGTERM of one broker that is not the active controller, timed from its exec.\n\n",
		partitionsRF, partitionsBrokers, s.cfg.Scale.PerTopic, s.cfg.Scale.MetadataRequests, s.cfg.Scale.Idle)
	cols := []string{"metric"}
	for _, n := range counts {
		for _, t := range ts {
			cols = append(cols, fmt.Sprintf("%s %d", t, n))
		}
	}
	fmt.Fprintf(s.out, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, m := range partMetrics {
		row := []string{m.name}
		for _, n := range counts {
			for _, t := range ts {
				row = append(row, s.partCell(t, n, m))
			}
		}
		fmt.Fprintf(s.out, "| %s |\n", strings.Join(row, " | "))
	}
	s.partitionGoals(ts)
	s.partitionGrowth(ts)
	s.partitionFailures()
	s.partitionReps()
}

// partGoal is one of issue 20's goals for 10,000 partitions.
type partGoal struct {
	name  string
	m     partMetric
	limit float64
	text  string
}

func percent(f float64) string { return fmt.Sprintf("%.1f%%", f) }

var partGoals = []partGoal{
	{"ready (every partition led, full ISR)", pmReady, float64(60 * time.Second), "< 60 s"},
	{"full Metadata p50", pmMeta50, float64(100 * time.Millisecond), "< 100 ms"},
	{"idle CPU, three brokers together, of one core", partMetric{pmIdle.name, pmIdle.get, percent}, 10, "< 10%"},
	{"RSS per broker (largest)", partMetric{pmRSS.name, pmRSS.get, func(f float64) string { return fmtBytes(int64(f)) }}, 1 << 30, "< 1 GiB"},
	{"one broker's restart back in sync", pmInSync, float64(30 * time.Second), "< 30 s"},
}

// partitionGoals checks kbroker against the goals at 10,000 partitions,
// or at the largest count measured (the table says which).
func (s *suite) partitionGoals(ts []targetKind) {
	n := slices.Max(s.cfg.Scale.PartitionCounts)
	note := ""
	if n != 10000 {
		note = fmt.Sprintf(" (the goals are for 10,000 partitions; this run's largest count is %d)", n)
	}
	fmt.Fprintf(s.out, "\n### Goals at %d partitions%s\n\n| goal | %s | goal | kbroker verdict |\n|---|%s---|---|\n",
		n, note, strings.Join(targetNames(ts), " | "), strings.Repeat("---|", len(ts)))
	for _, g := range partGoals {
		row := []string{g.name}
		for _, t := range ts {
			row = append(row, s.partCell(t, n, g.m))
		}
		verdict := "not measured"
		if v, _, ok := s.partMedian(kindKbroker, n, g.m); ok {
			verdict = map[bool]string{true: "met", false: "MISSED"}[v < g.limit]
		} else if len(s.partRunsOf(kindKbroker, n)) > 0 {
			verdict = "MISSED (failed)"
		}
		fmt.Fprintf(s.out, "| %s | %s | %s |\n", strings.Join(row, " | "), g.text, verdict)
	}
}

// growth is one row of the growth table: the change of m's median from
// one count to another, per unit (one partition, or 1,000).
type growth struct {
	name   string
	m      partMetric
	unit   float64 // partitions per unit
	format func(float64) string
}

var partGrowth = []growth{
	{"RSS per extra partition, per broker, KiB", pmRSSPart, 1, kib},
	{"idle CPU per 1,000 extra partitions, % of one core", pmIdle, 1000, num2},
	{"full Metadata p50 per 1,000 extra partitions", pmMeta50, 1000, msFmt},
	{"ready time per 1,000 extra partitions", pmReady, 1000, msFmt},
	{"open fds per extra partition, largest broker", pmFDs, 1, num2},
	{"restart back in sync per 1,000 extra partitions", pmInSync, 1000, msFmt},
}

// partitionGrowth is what one more partition costs between the smallest
// and the largest count (the RSS row: from its per-partition medians'
// totals, so that the empty broker's memory drops out).
func (s *suite) partitionGrowth(ts []targetKind) {
	a, b := slices.Min(s.cfg.Scale.PartitionCounts), slices.Max(s.cfg.Scale.PartitionCounts)
	if a == b {
		fmt.Fprintf(s.out, "\nOne count only: the growth per partition is the table's rows per partition over the empty broker.\n")
		return
	}
	fmt.Fprintf(s.out, "\n### What one more partition costs, from %d to %d partitions (differences of medians)\n\n| growth | %s |\n|---|%s\n",
		a, b, strings.Join(targetNames(ts), " | "), strings.Repeat("---|", len(ts)))
	for _, g := range partGrowth {
		row := []string{g.name}
		for _, t := range ts {
			va, _, okA := s.partMedian(t, a, g.m)
			vb, _, okB := s.partMedian(t, b, g.m)
			if g.m.name == pmRSSPart.name { // per-partition medians back to totals
				va, vb = va*float64(a), vb*float64(b)
			}
			cell := "-"
			if okA && okB {
				cell = g.format(slope(va, vb, a, b) * g.unit)
			}
			row = append(row, cell)
		}
		fmt.Fprintf(s.out, "| %s |\n", strings.Join(row, " | "))
	}
}

// slope is the change from va at a to vb at b, per unit of count.
func slope(va, vb float64, a, b int) float64 { return (vb - va) / float64(b-a) }

func (s *suite) partitionFailures() {
	first := true
	for _, r := range s.partRuns {
		if r.Err == "" {
			continue
		}
		if first {
			fmt.Fprintf(s.out, "\nFailed repetitions (what failed, then what the brokers held):\n\n")
			first = false
		}
		fmt.Fprintf(s.out, "- %s %d partitions rep %d: %s. %s\n", r.Target, r.Partitions, r.Rep, r.Err, r.Diagnosis)
	}
}

// durCell is d, or "-" for a step not reached.
func durCell(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return fmtDur(d)
}

func (s *suite) partitionReps() {
	fmt.Fprintf(s.out, "\n### Each repetition\n\n| target | partitions | rep | place | load avg | ready | metadata p50 | idle CPU %% | RSS MiB per broker | fds per broker (limit) | maps | one record each | restart in sync | log lines \"too many open files\" | result |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range s.partRuns {
		var rss, fds, maps []string
		for _, h := range r.Held {
			rss = append(rss, mib(float64(h.RSS)))
			fds = append(fds, fmt.Sprintf("%d (%s)", h.FDs, limitText(h.FDLimit)))
			maps = append(maps, fmt.Sprint(h.Maps))
		}
		insync := "-"
		if r.Restart != nil {
			insync = durCell(r.Restart.InSync)
		}
		result := "ok"
		if r.Err != "" {
			result = "FAILED"
		}
		emfile := "-"
		if r.EMFILE != nil {
			emfile = strings.Trim(fmt.Sprint(r.EMFILE), "[]")
		}
		fmt.Fprintf(s.out, "| %s | %d | %d | %d | %s | %s | %s | %.2f | %s | %s | %s | %s | %s | %s | %s |\n", r.Target, r.Partitions, r.Rep, r.Position,
			strings.Fields(r.LoadAvg + " ?")[0], durCell(r.Ready), durCell(r.MetaP50), r.IdleCPUPercent(), strings.Join(rss, ", "),
			strings.Join(fds, ", "), strings.Join(maps, ", "), durCell(r.ProduceAll), insync, emfile, result)
	}
	fmt.Fprintf(s.out, "\nvm.max_map_count: %d\n", maxMapCount())
}
