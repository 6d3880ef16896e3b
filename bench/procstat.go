package main

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/<pid>/stat:
// 100 on every Linux architecture Go supports.
const clockTicks = 100

// procTimes is what /proc/<pid>/stat counts for a process: CPU time
// (utime+stime) and minor page faults (minflt), each first touch of a page.
type procTimes struct {
	CPU    time.Duration
	Faults int64
}

func (a procTimes) sub(b procTimes) procTimes {
	return procTimes{CPU: a.CPU - b.CPU, Faults: a.Faults - b.Faults}
}

// readProcTimes reads utime, stime and minflt of pid from /proc/<pid>/stat.
func readProcTimes(pid int) (procTimes, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procTimes{}, err
	}
	// The command name (field 2) may hold spaces: fields count from the
	// last ')'. minflt, utime and stime are fields 10, 14 and 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procTimes{}, fmt.Errorf("/proc/%d/stat: no ')'", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return procTimes{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	flt, err0 := strconv.ParseInt(f[7], 10, 64)
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err0 != nil || err1 != nil || err2 != nil {
		return procTimes{}, fmt.Errorf("/proc/%d/stat: bad minflt/utime/stime", pid)
	}
	return procTimes{CPU: time.Duration(ut+st) * time.Second / clockTicks, Faults: flt}, nil
}

// memStatus returns VmHWM (peak RSS) and RssAnon of pid, in bytes.
func memStatus(pid int) (hwm, anon int64, err error) {
	st, err := readStatus(pid)
	return st["VmHWM"], st["RssAnon"], err
}

func parseKB(v string) int64 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n << 10
}

// procWatch measures broker processes over one run: CPU time and page
// faults from before to after, VmHWM at the end, and the peak RssAnon sampled every 100 ms
// (VmHWM counts mapped segment pages, which are page cache).
type procWatch struct {
	pids []int
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex // guards the following
	t0       []procTimes
	peakAnon []int64
}

func watchProcs(pids []int) *procWatch {
	w := &procWatch{pids: pids, stop: make(chan struct{}), done: make(chan struct{}), peakAnon: make([]int64, len(pids))}
	for _, pid := range pids {
		t, _ := readProcTimes(pid)
		w.t0 = append(w.t0, t)
	}
	go w.sample()
	return w
}

// rebase restarts the CPU and fault counts (when the clock starts).
func (w *procWatch) rebase() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, pid := range w.pids {
		if t, err := readProcTimes(pid); err == nil {
			w.t0[i] = t
		}
	}
}

func (w *procWatch) sample() {
	defer close(w.done)
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		w.mu.Lock()
		for i, pid := range w.pids {
			if _, anon, err := memStatus(pid); err == nil {
				w.peakAnon[i] = max(w.peakAnon[i], anon)
			}
		}
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-t.C:
		}
	}
}

// procUsage is what the broker processes used during a run.
type procUsage struct {
	CPU     time.Duration // utime+stime of all pids, summed
	Faults  int64         // minor page faults of all pids, summed
	MaxHWM  int64         // the largest VmHWM of any pid (peak RSS)
	MaxAnon int64         // the largest peak RssAnon of any pid
	PerPid  []pidUsage
}

type pidUsage struct {
	Pid      int
	CPU      time.Duration
	Faults   int64
	HWM      int64
	PeakAnon int64
}

func (w *procWatch) finish() procUsage {
	close(w.stop)
	<-w.done
	var u procUsage
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, pid := range w.pids {
		t, _ := readProcTimes(pid)
		hwm, _, _ := memStatus(pid)
		d := t.sub(w.t0[i])
		p := pidUsage{Pid: pid, CPU: d.CPU, Faults: d.Faults, HWM: hwm, PeakAnon: w.peakAnon[i]}
		u.PerPid = append(u.PerPid, p)
		u.CPU += p.CPU
		u.Faults += p.Faults
		u.MaxHWM = max(u.MaxHWM, hwm)
		u.MaxAnon = max(u.MaxAnon, p.PeakAnon)
	}
	return u
}
