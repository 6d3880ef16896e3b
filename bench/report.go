package main

// The report: medians of every metric by workload and target, the goal
// tables of issue 20 (kbroker against kfake) and issue 8 (against the null
// broker), and the value of each repetition, so that the spread behind a
// median shows.

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// metric is one row of the results table.
type metric struct {
	name   string
	get    func(loadResult) float64
	format func(float64) string
}

func num(f float64) string   { return fmt.Sprintf("%.0f", f) }
func num2(f float64) string  { return fmt.Sprintf("%.2f", f) }
func num1(f float64) string  { return fmt.Sprintf("%.1f", f) }
func msFmt(f float64) string { return fmtDur(time.Duration(f)) }
func mib(f float64) string   { return fmt.Sprintf("%.0f", f/(1<<20)) }

var (
	mRecs     = metric{"records/s", loadResult.RecPerSec, num}
	mCount    = metric{"records", func(r loadResult) float64 { return float64(r.Records) }, num}
	mMB       = metric{"MB/s", loadResult.MBPerSec, num2}
	mAck50    = metric{"ack p50", func(r loadResult) float64 { return float64(r.AckP50) }, msFmt}
	mAck99    = metric{"ack p99", func(r loadResult) float64 { return float64(r.AckP99) }, msFmt}
	mAck999   = metric{"ack p99.9", func(r loadResult) float64 { return float64(r.AckP999) }, msFmt}
	mE2E50    = metric{"e2e p50", func(r loadResult) float64 { return float64(r.E2EP50) }, msFmt}
	mE2E99    = metric{"e2e p99", func(r loadResult) float64 { return float64(r.E2EP99) }, msFmt}
	mCPU      = metric{"broker CPU ms/MB", loadResult.CPUPerMB, num1}
	mCPURec   = metric{"broker CPU µs/record", loadResult.CPUPerRecord, num1}
	mFaults   = metric{"broker page faults/MB", loadResult.FaultsPerMB, num}
	mHWM      = metric{"peak RSS MiB (VmHWM, max of brokers)", func(r loadResult) float64 { return float64(r.Usage.MaxHWM) }, mib}
	mAnon     = metric{"peak anon RSS MiB (max of brokers)", func(r loadResult) float64 { return float64(r.Usage.MaxAnon) }, mib}
	mIdleAnon = metric{"memory per idle connection, KiB (a fresh broker's RssAnon growth / connections)", func(r loadResult) float64 { return r.Idle.AnonPerConn() }, kib}
	mIdleRSS  = metric{"memory per idle connection, KiB (a fresh broker's VmRSS growth / connections)", func(r loadResult) float64 { return r.Idle.RSSPerConn() }, kib}
	mIdleSock = metric{"broker sockets opened by the idle connections", func(r loadResult) float64 { return float64(r.Idle.Sockets) }, num}
	mSetup    = metric{"join: every group assigned", func(r loadResult) float64 { return float64(r.Setup) }, msFmt}
	mFsyncs   = metric{"fsyncs/s, data (the brokers' fsyncs and msyncs)", func(r loadResult) float64 { return r.perSec(r.Syncs.DataSyncs) }, num}
	mDirSyncs = metric{"fsyncs/s, directories", func(r loadResult) float64 { return r.perSec(r.Syncs.DirSyncs) }, num}
	mRounds   = metric{"group commit rounds/s (the brokers together)", func(r loadResult) float64 { return r.perSec(r.Syncs.Rounds) }, num}
	durableM  = append(slices.Clone(produceM), mFsyncs, mDirSyncs, mRounds)
	produceM  = []metric{mCount, mRecs, mMB, mAck50, mAck99, mAck999, mCPU, mFaults, mHWM, mAnon}
	groupsM   = []metric{mCount, mRecs, mMB, mCPU, mHWM, mAnon, mSetup}
	mJoin     = metric{"join: every member assigned", func(r loadResult) float64 { return float64(r.Setup) }, msFmt}
	queueM    = []metric{mCount, mRecs, mMB, mCPU, mCPURec, mHWM, mAnon, mJoin}
	// the share path's requests and state writes (kbroker's /metrics)
	mShareFetches = metric{"ShareFetch requests", func(r loadResult) float64 { return r.Syncs.ShareFetches }, num}
	mShareAcks    = metric{"ShareAcknowledge requests", func(r loadResult) float64 { return r.Syncs.ShareAcks }, num}
	mStateRecords = metric{"__share_group_state records written", func(r loadResult) float64 { return r.Syncs.StateRecords }, num}
	mRecsPerFetch = metric{"records per ShareFetch", func(r loadResult) float64 { return perCount(r.Records, r.Syncs.ShareFetches) }, num}
	mRecsPerState = metric{"records per state write", func(r loadResult) float64 { return perCount(r.Records, r.Syncs.StateRecords) }, num}
	shareM        = append(slices.Clone(queueM), mShareFetches, mRecsPerFetch, mShareAcks, mStateRecords, mRecsPerState)
	wMetrics      = map[string][]metric{
		"w1":            produceM,
		"w2":            produceM,
		"w3":            {mCount, mRecs, mMB, mCPU, mHWM, mAnon},
		"w2-acks1":      produceM,
		"w2-durable":    durableM,
		"w2-txn":        produceM,
		"w3-txn":        {mCount, mRecs, mMB, mCPU, mHWM, mAnon},
		"w3-rc":         {mCount, mRecs, mMB, mCPU, mHWM, mAnon},
		"w4":            {mCount, mRecs, mE2E50, mE2E99, mAck50, mAck99, mCPU, mCPURec, mHWM, mAnon},
		"conn-one":      produceM,
		"conn-idle":     append(slices.Clone(produceM), mIdleAnon, mIdleRSS, mIdleSock),
		"conn-many":     produceM,
		"cg-fill":       produceM,
		"cg-one":        groupsM,
		"cg-many":       groupsM,
		"qs-fill1":      produceM,
		"qs-share":      shareM,
		"qs-share-2000": shareM,
		"qs-fill4":      produceM,
		"qs-classic":    queueM,
	}
	wDesc = map[string]string{
		"w1":         "1 partition, 100 B records, acks=1, RF=1, 1 broker",
		"w2":         "12 partitions, 1 KiB records, acks=all (idempotent), RF=3, 3 brokers",
		"w3":         "consume all of w2's topic from the start, 3 brokers",
		"w2-acks1":   "w2 with acks=1 (so not idempotent), RF=3, 3 brokers",
		"w2-durable": "w2 with durable acks: flush.messages=1 on the topic (acknowledged once every ISR member fsynced it), RF=3, 3 brokers; kbroker only",
		"w2-txn":     "w2 in transactions: each producer commits every 100 ms (EndAndBeginTransaction, safe), RF=3, 3 brokers",
		"w3-txn":     "consume all of w2-txn's topic from the start, read_uncommitted, 3 brokers",
		"w3-rc":      "consume all of w2-txn's topic from the start, read_committed (to the last stable offset, aborted lists), 3 brokers",
		"w4":         "e2e at 5,000 records/s, 12 partitions, 1 KiB, acks=all (idempotent), RF=3, 3 brokers, linger 0",
	}
	reportOrder = []string{"w1", "w2", "w3", "w2-acks1", "w2-durable", "w2-txn", "w3-txn", "w3-rc", "w4", "qs-fill1", "qs-share", "qs-share-2000", "qs-fill4", "qs-classic",
		"conn-one", "conn-idle", "conn-many", "cg-fill", "cg-one", "cg-many"}
)

// median of vs; ok false when there are none.
func median(vs []float64) (float64, bool) {
	if len(vs) == 0 {
		return 0, false
	}
	vs = slices.Sorted(slices.Values(vs))
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

// okRuns are the successful measured runs of w on t, in repetition order.
func (s *suite) okRuns(w string, t targetKind) []runRecord {
	var out []runRecord
	for _, rr := range s.runs {
		if rr.Workload == w && rr.Target == t && rr.Err == "" {
			out = append(out, rr)
		}
	}
	return out
}

func (s *suite) values(w string, t targetKind, m metric) []float64 {
	var vs []float64
	for _, rr := range s.okRuns(w, t) {
		vs = append(vs, m.get(rr.Result))
	}
	return vs
}

func (s *suite) median(w string, t targetKind, m metric) (float64, bool) {
	return median(s.values(w, t, m))
}

func (s *suite) report() {
	if len(s.runs) > 0 {
		s.table()
		s.failures()
		s.issue20()
		s.issue14()
		s.issue8()
		s.issue15()
		s.issue16()
		s.issue19()
		s.scaleTable()
		s.perRep()
		s.bystanders()
	}
	s.partitionsReport()
	s.durations()
}

// desc is workload w's description in the report.
func (s *suite) desc(w string) string {
	if d := s.ws[w].desc; d != "" {
		return d
	}
	return wDesc[w]
}

// peers are the ratio columns of the results table: kbroker over each.
var peers = []targetKind{kindKfake, kindNull, kindKbrokerB, kindNullRF, kindKbrokerSASLSSL}

func (s *suite) table() {
	fmt.Fprintf(s.out, "\n## Results (medians of %d runs)\n\n", s.cfg.Reps)
	cols := append([]string{"workload", "metric"}, targetNames(s.cfg.Targets)...)
	var ratios []targetKind
	for _, p := range peers {
		if s.has(kindKbroker) && s.has(p) {
			ratios = append(ratios, p)
			cols = append(cols, "kbroker/"+string(p))
		}
	}
	fmt.Fprintf(s.out, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---|", len(cols)))
	for _, w := range reportOrder {
		if !s.attemptedAny(w) {
			continue
		}
		for i, m := range wMetrics[w] {
			label := ""
			if i == 0 {
				label = fmt.Sprintf("**%s** %s", w, s.desc(w))
			}
			row := []string{label, m.name}
			vals := map[targetKind]float64{}
			for _, t := range s.cfg.Targets {
				row = append(row, s.cell(w, t, m, vals))
			}
			for _, p := range ratios {
				row = append(row, ratio(vals, kindKbroker, p))
			}
			fmt.Fprintf(s.out, "| %s |\n", strings.Join(row, " | "))
		}
	}
}

// cell is the median of m for w on t (stored in vals), "failed" or "-".
func (s *suite) cell(w string, t targetKind, m metric, vals map[targetKind]float64) string {
	v, ok := s.median(w, t, m)
	if !ok {
		if s.attempted(w, t) {
			return "failed"
		}
		return "-"
	}
	vals[t] = v
	cell := m.format(v)
	if n := len(s.okRuns(w, t)); n < s.cfg.Reps {
		cell += fmt.Sprintf(" (%d/%d runs)", n, s.cfg.Reps)
	}
	return cell
}

func (s *suite) has(t targetKind) bool { return slices.Contains(s.cfg.Targets, t) }

// attempted says whether t ran w at all (null-rf runs only w2).
func (s *suite) attempted(w string, t targetKind) bool {
	return slices.ContainsFunc(s.runs, func(rr runRecord) bool { return rr.Workload == w && rr.Target == t })
}

func (s *suite) attemptedAny(w string) bool {
	return slices.ContainsFunc(s.runs, func(rr runRecord) bool { return rr.Workload == w })
}

func (s *suite) failures() {
	first := true
	for _, rr := range s.runs {
		if rr.Err == "" && rr.Result.Errors == 0 {
			continue
		}
		if first {
			fmt.Fprintf(s.out, "\nFailed runs or runs with client errors:\n\n")
			first = false
		}
		msg := rr.Err
		if msg == "" {
			msg = fmt.Sprintf("%d client errors, first: %s", rr.Result.Errors, rr.Result.FirstError)
		}
		fmt.Fprintf(s.out, "- %s %s rep %d: %s\n", rr.Workload, rr.Target, rr.Rep, msg)
	}
}

func ratio(vals map[targetKind]float64, a, b targetKind) string {
	va, oka := vals[a]
	vb, okb := vals[b]
	if !oka || !okb || vb == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fx", va/vb)
}

func targetNames(ts []targetKind) []string {
	var out []string
	for _, t := range ts {
		out = append(out, string(t))
	}
	return out
}

// side is one side of a goal: a metric of a workload on a target.
type side struct {
	w string
	t targetKind
}

// goal compares a over b: the ratio of their medians against limit.
type goal struct {
	name    string
	a, b    side
	m       metric
	limit   float64
	atLeast bool // the ratio must be >= limit (else <=)
}

// issue20Goals are the table of issue 20, part 2.
var issue20Goals = []goal{
	{"w2 MB/s, 3 brokers RF=3 acks=all vs kfake (no replication)", side{"w2", kindKbroker}, side{"w2", kindKfake}, mMB, 1.0, true},
	{"w2 CPU per MB, three brokers together vs kfake", side{"w2", kindKbroker}, side{"w2", kindKfake}, mCPU, 1.5, false},
	{"w4 e2e p99 at 5,000 records/s, acks=all, linger 0", side{"w4", kindKbroker}, side{"w4", kindKfake}, mE2E99, 1.0, false},
	{"w4 server CPU per record", side{"w4", kindKbroker}, side{"w4", kindKfake}, mCPURec, 1.2, false},
	{"w3 consume MB/s vs kfake", side{"w3", kindKbroker}, side{"w3", kindKfake}, mMB, 2.0, true},
	{"acks=all vs acks=1 at RF=3, same partitions (kbroker w2 / w2-acks1 MB/s)", side{"w2", kindKbroker}, side{"w2-acks1", kindKbroker}, mMB, 0.6, true},
}

// issue8Goals are issue 8's targets that the table decides.
var issue8Goals = []goal{
	{"w1 records/s >= 0.95x null", side{"w1", kindKbroker}, side{"w1", kindNull}, mRecs, 0.95, true},
	{"w1 broker CPU per MB <= 1.2x null", side{"w1", kindKbroker}, side{"w1", kindNull}, mCPU, 1.2, false},
	{"w2 MB/s >= kfake (3 brokers)", side{"w2", kindKbroker}, side{"w2", kindKfake}, mMB, 1, true},
	{"w2 brokers' CPU per MB <= 3x null", side{"w2", kindKbroker}, side{"w2", kindNull}, mCPU, 3, false},
	{"w3 MB/s >= 1.5x kfake", side{"w3", kindKbroker}, side{"w3", kindKfake}, mMB, 1.5, true},
	{"w4 e2e p99 <= kfake", side{"w4", kindKbroker}, side{"w4", kindKfake}, mE2E99, 1, false},
}

// anyGoalRan says whether a workload of gs ran at all (a scale-only run
// has no goal table).
func (s *suite) anyGoalRan(gs []goal) bool {
	for _, g := range gs {
		if s.attemptedAny(g.a.w) || s.attemptedAny(g.b.w) {
			return true
		}
	}
	return false
}

// issue14Goals are the transactions issue's: Kafka's design puts the
// overhead of transactions at a few percent at 100 ms commit intervals.
var issue14Goals = []goal{
	{"transactional w2 (a commit every 100 ms) vs w2 MB/s", side{"w2-txn", kindKbroker}, side{"w2", kindKbroker}, mMB, 0.85, true},
	{"read_committed vs read_uncommitted consume of w2-txn's topic MB/s", side{"w3-rc", kindKbroker}, side{"w3-txn", kindKbroker}, mMB, 0.95, true},
}

func (s *suite) issue14() {
	if !s.attemptedAny("w2-txn") {
		return
	}
	fmt.Fprintf(s.out, "\n## Issue 14: transactions against their non-transactional peers (ratios of medians, this run)\n\n")
	s.goalTable(issue14Goals)
}

// issue15Goals are the security issue's throughput goal.
var issue15Goals = []goal{
	{"w2 MB/s over SASL_SSL (SCRAM-SHA-512, TLS between brokers too) vs plaintext", side{"w2", kindKbrokerSASLSSL}, side{"w2", kindKbroker}, mMB, 0.6, true},
}

// issue16Goals are the share groups issue's throughput goal: a queue on
// one partition against the classic way of sharing the same load.
var issue16Goals = []goal{
	{"share group, 4 consumers on 1 partition, vs a classic group of 4 on 4 partitions (records/s); share.partition.max.record.locks=10000",
		side{"qs-share", kindKbroker}, side{"qs-classic", kindKbroker}, mRecs, 0.5, true},
	{"the same with Kafka's default share.partition.max.record.locks, 2000",
		side{"qs-share-2000", kindKbroker}, side{"qs-classic", kindKbroker}, mRecs, 0.5, true},
}

func (s *suite) issue16() {
	if !s.has(kindKbroker) || !s.attemptedAny("qs-share") {
		return
	}
	fmt.Fprintf(s.out, "\n## Issue 16: a share group against a classic group (ratios of medians, this run)\n\n")
	s.goalTable(issue16Goals)
	if share, ok := s.median("qs-share", kindKfake, mRecs); ok {
		if classic, ok := s.median("qs-classic", kindKfake, mRecs); ok && classic > 0 {
			fmt.Fprintf(s.out, "\n- context: kfake's share group reads %s records/s, %.2fx its classic group (%s records/s)\n",
				num(share), share/classic, num(classic))
		}
	}
}

func (s *suite) issue15() {
	if !s.has(kindKbrokerSASLSSL) || !s.attemptedAny("w2") {
		return
	}
	fmt.Fprintf(s.out, "\n## Issue 15: kbroker over SASL_SSL against plaintext (ratios of medians, this run)\n\n")
	s.goalTable(issue15Goals)
}

// issue19Goals are the durable acks goal of issue 19.
var issue19Goals = []goal{
	{"w2 MB/s with durable acks (flush.messages=1, group commit) vs Kafka's default flush policy", side{"w2-durable", kindKbroker}, side{"w2", kindKbroker}, mMB, 0.5, true},
}

func (s *suite) issue19() {
	if !s.has(kindKbroker) || !s.attemptedAny("w2-durable") {
		return
	}
	fmt.Fprintf(s.out, "\n## Issue 19: durable acks against the default (ratios of medians, this run)\n\n")
	s.goalTable(issue19Goals)
	for _, m := range []metric{mFsyncs, mDirSyncs, mRounds} {
		a, okA := s.median("w2-durable", kindKbroker, m)
		b, okB := s.median("w2", kindKbroker, m)
		if okA && okB {
			fmt.Fprintf(s.out, "- %s: w2-durable %s, w2 %s\n", m.name, m.format(a), m.format(b))
		}
	}
}

func (s *suite) issue20() {
	if !s.anyGoalRan(issue20Goals) {
		return
	}
	fmt.Fprintf(s.out, "\n## Issue 20: kbroker against kfake (ratios of medians, this run)\n\n")
	s.goalTable(issue20Goals)
}

func (s *suite) issue8() {
	if !s.anyGoalRan(issue8Goals) {
		return
	}
	fmt.Fprintf(s.out, "\n## Issue 8 targets\n\n")
	s.goalTable(issue8Goals)
	s.replicationFloor()
	s.rssTarget()
}

// goalTable prints each goal: both medians, their ratio, the ratio of each
// repetition's pair (the runs were interleaved, so a pair ran minutes apart
// at most), the goal and the verdict.
func (s *suite) goalTable(gs []goal) {
	fmt.Fprintf(s.out, "| workload | A | B | A/B (medians) | A/B per repetition | goal | verdict |\n|---|---|---|---|---|---|---|\n")
	for _, g := range gs {
		a, okA := s.median(g.a.w, g.a.t, g.m)
		b, okB := s.median(g.b.w, g.b.t, g.m)
		if !okA || !okB || b == 0 {
			fmt.Fprintf(s.out, "| %s | %s | %s | not measured | | %s | |\n", g.name, g.a.label(), g.b.label(), g.limitText())
			continue
		}
		r := a / b
		verdict := "MISSED"
		if (g.atLeast && r >= g.limit) || (!g.atLeast && r <= g.limit) {
			verdict = "met"
		}
		fmt.Fprintf(s.out, "| %s | %s %s | %s %s | **%.2fx** | %s | %s | %s |\n", g.name, g.a.label(), g.m.format(a),
			g.b.label(), g.m.format(b), r, s.pairRatios(g), g.limitText(), verdict)
	}
}

func (sd side) label() string { return fmt.Sprintf("%s %s", sd.t, sd.w) }

func (g goal) limitText() string {
	if g.atLeast {
		return fmt.Sprintf(">= %.2fx", g.limit)
	}
	return fmt.Sprintf("<= %.2fx", g.limit)
}

// pairRatios are a/b for each repetition where both runs succeeded.
func (s *suite) pairRatios(g goal) string {
	var out []string
	for rep := 1; rep <= s.cfg.Reps; rep++ {
		a, okA := s.repValue(g.a, rep, g.m)
		b, okB := s.repValue(g.b, rep, g.m)
		if okA && okB && b != 0 {
			out = append(out, fmt.Sprintf("%.2f", a/b))
		}
	}
	return strings.Join(out, ", ")
}

func (s *suite) repValue(sd side, rep int, m metric) (float64, bool) {
	for _, rr := range s.okRuns(sd.w, sd.t) {
		if rr.Rep == rep {
			return m.get(rr.Result), true
		}
	}
	return 0, false
}

// replicationFloor puts w2's CPU per MB beside null-rf's, the null broker
// writing every batch once per replica: what three page-cache copies of each
// byte cost on this machine with no protocol, network or validation work.
// Context for the 3x-null target, not a target itself.
func (s *suite) replicationFloor() {
	k, ok1 := s.median("w2", kindKbroker, mCPU)
	n, ok2 := s.median("w2", kindNull, mCPU)
	f, ok3 := s.median("w2", kindNullRF, mCPU)
	if !ok1 || !ok2 || !ok3 || n == 0 || f == 0 {
		return
	}
	fmt.Fprintf(s.out, "\n- context: null-rf (the null broker writing each batch once per replica, nothing else) "+
		"costs %s ms/MB = %.2fx null in w2; kbroker costs %.2fx null-rf\n", num1(f), f/n, k/f)
}

func (s *suite) rssTarget() {
	var worst, worstAnon int64
	for _, rr := range s.okRuns("w2", kindKbroker) {
		worst = max(worst, rr.Result.Usage.MaxHWM)
		worstAnon = max(worstAnon, rr.Result.Usage.MaxAnon)
	}
	if worst == 0 {
		return
	}
	verdict := func(n int64) string {
		if n < 300<<20 {
			return "met"
		}
		return "MISSED"
	}
	fmt.Fprintf(s.out, "\n- w2 each broker's RSS < 300 MiB: largest VmHWM of any broker in any run %s (includes mapped segment pages): %s; "+
		"largest RssAnon (page cache aside) %s: %s\n", fmtBytes(worst), verdict(worst), fmtBytes(worstAnon), verdict(worstAnon))
}

// perRep lists each repetition's headline figures, with the target's
// place in its repetition's rotation, so the spread behind a median and
// any effect of the order show.
func (s *suite) perRep() {
	fmt.Fprintf(s.out, "\n## Each repetition\n\n")
	fmt.Fprintf(s.out, "| workload | target | MB/s | e2e p99 | broker CPU ms/MB | page faults/MB | place in rotation | load avg at start |\n|---|---|---|---|---|---|---|---|\n")
	for _, w := range reportOrder {
		for _, t := range s.cfg.Targets {
			runs := s.okRuns(w, t)
			if len(runs) == 0 {
				continue
			}
			var mb, e2e, cpu, faults, pos, la []string
			for _, rr := range runs {
				mb = append(mb, num1(rr.Result.MBPerSec()))
				e2e = append(e2e, fmtDur(rr.Result.E2EP99))
				cpu = append(cpu, num1(rr.Result.CPUPerMB()))
				faults = append(faults, num(rr.Result.FaultsPerMB()))
				pos = append(pos, fmt.Sprint(rr.Position))
				la = append(la, strings.Fields(rr.LoadAvg + " ?")[0])
			}
			if w != "w4" {
				e2e = nil
			}
			fmt.Fprintf(s.out, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", w, t, strings.Join(mb, ", "), strings.Join(e2e, ", "),
				strings.Join(cpu, ", "), strings.Join(faults, ", "), strings.Join(pos, ", "), strings.Join(la, ", "))
		}
	}
}

// bystanders says what the idle clusters of the other targets cost while a
// run was measured: the price of keeping every target's cluster up between
// its repetitions.
func (s *suite) bystanders() {
	var per []float64
	for _, rr := range s.runs {
		if rr.Err == "" && rr.Wall > 0 {
			per = append(per, rr.Bystanders.Seconds()/rr.Wall.Seconds()*100)
		}
	}
	if m, ok := median(per); ok {
		fmt.Fprintf(s.out, "\nThe other targets' idle clusters used a median %.1f%% of one core during a measured run (largest %.1f%%).\n",
			m, slices.Max(per))
	}
}

// perCount is n per count (0 when there is no count: kfake exports none).
func perCount(n int64, count float64) float64 {
	if count <= 0 {
		return 0
	}
	return float64(n) / count
}
