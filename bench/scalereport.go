package main

// The connections and consumers workloads' report: each target from one
// run to the other (a producer alone and beside idle connections, one
// producer and many, one group and many), what one more connection or
// group costs, and how long each group of workloads took.

import (
	"fmt"
	"strings"
	"time"
)

// scaleRow is one row of the connections and consumers table: m from
// workload from to workload to on each target (from "": m of to alone), or
// a figure derived from both medians.
type scaleRow struct {
	name     string
	from, to string
	m        metric
	derive   func(from, to float64, n int) float64 // nil: show both and their ratio
	format   func(float64) string                  // of derive's value
}

var (
	mPerGroup = metric{"MB/s per group", func(r loadResult) float64 { return r.MBPerSec() / float64(max(r.Groups, 1)) }, num2}
	mElapsed  = metric{"time", func(r loadResult) float64 { return float64(r.Elapsed) }, msFmt}
)

// cpuPerExtraGroup is the brokers' CPU per MB of the topic that one more
// group reading it costs: from total CPU at one group (ms/MB of one copy)
// to n groups (ms/MB delivered, n copies).
func cpuPerExtraGroup(one, many float64, n int) float64 {
	return (many*float64(n) - one) / float64(n-1)
}

// timePerExtraGroup is how much longer reading the topic takes with one
// more group.
func timePerExtraGroup(one, many float64, n int) float64 { return (many - one) / float64(n-1) }

func (s *suite) scaleRows() []scaleRow {
	sc := s.cfg.Scale
	return []scaleRow{
		{name: fmt.Sprintf("memory per idle connection, KiB (a fresh broker's RssAnon growth / %d)", sc.IdleConns), to: "conn-idle", m: mIdleAnon},
		{name: fmt.Sprintf("memory per idle connection, KiB (a fresh broker's VmRSS growth / %d)", sc.IdleConns), to: "conn-idle", m: mIdleRSS},
		{name: fmt.Sprintf("one producer's MB/s: alone -> beside %d idle connections", sc.IdleConns), from: "conn-one", to: "conn-idle", m: mMB},
		{name: fmt.Sprintf("broker CPU ms/MB: alone -> beside %d idle connections", sc.IdleConns), from: "conn-one", to: "conn-idle", m: mCPU},
		{name: fmt.Sprintf("aggregate MB/s: one producer -> %d producers", sc.Producers), from: "conn-one", to: "conn-many", m: mMB},
		{name: fmt.Sprintf("broker CPU ms/MB: one producer -> %d producers", sc.Producers), from: "conn-one", to: "conn-many", m: mCPU},
		{name: fmt.Sprintf("total MB/s delivered: one group -> %d groups at once", sc.Groups), from: "cg-one", to: "cg-many", m: mMB},
		{name: fmt.Sprintf("MB/s per group: one group -> %d groups", sc.Groups), from: "cg-one", to: "cg-many", m: mPerGroup},
		{name: fmt.Sprintf("broker CPU ms per MB delivered: one group -> %d groups", sc.Groups), from: "cg-one", to: "cg-many", m: mCPU},
		{name: "join, until every group is assigned", from: "cg-one", to: "cg-many", m: mSetup},
		{name: "growth: broker CPU per extra group, ms per MB of the topic", from: "cg-one", to: "cg-many", m: mCPU,
			derive: cpuPerExtraGroup, format: num2},
		{name: "growth: time to read the topic, per extra group", from: "cg-one", to: "cg-many", m: mElapsed,
			derive: timePerExtraGroup, format: msFmt},
	}
}

// scaleTable prints the rows whose workloads ran, a column per target and
// kbroker's "to" value over kfake's.
func (s *suite) scaleTable() {
	var rows []scaleRow
	for _, r := range s.scaleRows() {
		if s.attemptedAny(r.to) && (r.from == "" || s.attemptedAny(r.from)) {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return
	}
	fmt.Fprintf(s.out, "\n## Connections and consumer groups (issue 20, part 3: medians, each cell from -> to (to/from))\n\n")
	fmt.Fprintf(s.out, "| measure | %s | kbroker/kfake (of to) |\n|---|%s---|\n", strings.Join(targetNames(s.cfg.Targets), " | "),
		strings.Repeat("---|", len(s.cfg.Targets)))
	for _, r := range rows {
		cells := []string{r.name}
		tos := map[targetKind]float64{}
		for _, t := range s.cfg.Targets {
			cells = append(cells, s.scaleCell(r, t, tos))
		}
		cells = append(cells, ratio(tos, kindKbroker, kindKfake))
		fmt.Fprintf(s.out, "| %s |\n", strings.Join(cells, " | "))
	}
}

// scaleCell is row r on target t; the value compared across targets goes
// into tos.
func (s *suite) scaleCell(r scaleRow, t targetKind, tos map[targetKind]float64) string {
	b, okB := s.median(r.to, t, r.m)
	if !okB {
		return s.missing(r.to, t)
	}
	if r.from == "" {
		tos[t] = b
		return r.m.format(b)
	}
	a, okA := s.median(r.from, t, r.m)
	if !okA {
		return s.missing(r.from, t)
	}
	if n := s.ws[r.to].load.Groups; r.derive != nil {
		if n < 2 {
			return "-"
		}
		v := r.derive(a, b, n)
		tos[t] = v
		return r.format(v)
	}
	tos[t] = b
	if a == 0 {
		return fmt.Sprintf("%s -> %s", r.m.format(a), r.m.format(b))
	}
	return fmt.Sprintf("%s -> %s (%.2fx)", r.m.format(a), r.m.format(b), b/a)
}

func (s *suite) missing(w string, t targetKind) string {
	if s.attempted(w, t) {
		return "failed"
	}
	return "-"
}

// durations says how long each group of workloads took, warm-ups and
// cluster starts included.
func (s *suite) durations() {
	if len(s.walls) == 0 {
		return
	}
	fmt.Fprintf(s.out, "\n## How long each part took (warm-up repetitions included)\n\n")
	var total time.Duration
	for _, w := range s.walls {
		fmt.Fprintf(s.out, "- %s: %s\n", w.What, fmtMinutes(w.Wall))
		total += w.Wall
	}
	fmt.Fprintf(s.out, "- all of them: %s\n", fmtMinutes(total))
}

func fmtMinutes(d time.Duration) string {
	return fmt.Sprintf("%d min %02d s", int(d.Minutes()), int(d.Seconds())%60)
}
