package main

// The profiling pass: kbroker has no pprof endpoint, so the suite runs
// bench/pprofbroker (kbroker's broker package plus net/http/pprof) under w1,
// w2, w4 and qs-share (the share group's read, its topic filled first; after the same warm-up repetitions as the measured runs), takes a
// CPU profile and a delta allocation profile of every broker from the start
// of the timed records for as long as kbroker's median run took, and prints
// go tool pprof's tops.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

func (s *suite) profile(ctx context.Context, name string) error {
	w := s.ws[name]
	dir := filepath.Join(s.cfg.Out, "runs", "profile-"+name)
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	c, err := startCluster(ctx, startOpts{kind: kindKbroker, brokers: w.brokers, dir: dir, kbroker: s.cfg.PprofBin, pprof: true})
	if err != nil {
		return err
	}
	defer c.stop()
	lc := w.load
	lc.Brokers = c.addrs
	// A reader (qs-share) reads the topic its produce workload writes
	// first, in each warm-up and in the profiled run.
	fill := func() error {
		if w.reads == "" {
			return nil
		}
		fc := s.ws[w.reads].load
		fc.Brokers = c.addrs
		if _, err := runLoad(ctx, fc); err != nil {
			return fmt.Errorf("%s before %s: %w", w.reads, name, err)
		}
		return nil
	}
	// The same warm-up as the measured runs, then one capped run profiled
	// from its clock's start for as long as kbroker's median run took.
	for range s.cfg.WarmupReps {
		if err := fill(); err != nil {
			return err
		}
		if _, err := runLoad(ctx, lc); err != nil {
			return fmt.Errorf("warm-up: %w", err)
		}
		if err := deleteTopic(ctx, c.addrs, lc.Topic, c.dataLeft); err != nil {
			return err
		}
	}
	if err := fill(); err != nil {
		return err
	}
	secs := 5
	if m, ok := s.median(name, kindKbroker, metric{get: func(r loadResult) float64 { return r.Elapsed.Seconds() }}); ok {
		secs = max(1, int(m))
	}
	pf := &profiles{dir: filepath.Join(s.cfg.Out, "profiles"), name: name, secs: secs}
	if err := os.MkdirAll(pf.dir, 0o755); err != nil {
		return err
	}
	lc.onTimed = func() { pf.start(ctx, c.pprof) }
	res, err := runLoad(ctx, lc)
	pf.wg.Wait()
	if err != nil {
		return fmt.Errorf("load under profiling: %w", err)
	}
	if len(pf.errs) > 0 {
		return pf.errs[0]
	}
	fmt.Fprintf(s.out, "\n## Profiles of kbroker under %s (the first %d s of a %.1f s run of %d records, %d broker(s) merged)\n\n",
		name, secs, res.Elapsed.Seconds(), lc.Records, len(c.pprof))
	fmt.Fprintf(s.out, "Load while profiling: %s\n\nFiles: %s, %s\n", res, strings.Join(pf.cpu, " "), strings.Join(pf.allocs, " "))
	return s.pprofTops(ctx, name, pf)
}

// profiles are the CPU and allocation profiles of one profiled run, taken
// from every broker at once.
type profiles struct {
	dir, name   string
	secs        int
	cpu, allocs []string // files
	wg          sync.WaitGroup
	mu          sync.Mutex // guards errs
	errs        []error
}

// start fetches, in the background, a CPU and a delta allocation profile
// of secs seconds from each pprof address.
func (pf *profiles) start(ctx context.Context, addrs []string) {
	for i, addr := range addrs {
		for kind, short := range map[string]string{"profile": "cpu", "allocs": "allocs"} {
			file := filepath.Join(pf.dir, fmt.Sprintf("%s-%s-node%d.pb.gz", pf.name, short, i+1))
			if kind == "profile" {
				pf.cpu = append(pf.cpu, file)
			} else {
				pf.allocs = append(pf.allocs, file)
			}
			pf.wg.Add(1)
			go func() {
				defer pf.wg.Done()
				if err := fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, pf.secs), file); err != nil {
					pf.mu.Lock()
					pf.errs = append(pf.errs, err)
					pf.mu.Unlock()
				}
			}()
		}
	}
}

// pprofTops prints go tool pprof's tops of the merged profiles.
func (s *suite) pprofTops(ctx context.Context, name string, pf *profiles) error {
	for _, v := range []struct {
		title, index, sort string
		files              []string
	}{
		{"CPU, top 15 by flat time", "", "-flat", pf.cpu},
		{"CPU, top 15 by cumulative time", "", "-cum", pf.cpu},
		{"Allocations, top 15 by bytes allocated (flat)", "alloc_space", "-flat", pf.allocs},
		{"Allocations, top 15 by objects allocated (flat)", "alloc_objects", "-flat", pf.allocs},
	} {
		args := []string{"tool", "pprof", "-top", "-nodecount=15", v.sort}
		if v.index != "" {
			args = append(args, "-sample_index="+v.index)
		}
		out, err := exec.CommandContext(ctx, goTool(), append(args, v.files...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("go tool pprof: %v: %s", err, out)
		}
		fmt.Fprintf(s.out, "\n### %s: %s\n\n```\n%s```\n", name, v.title, trimPprof(string(out)))
	}
	// Who calls the runtime's copy and the raw syscalls: the flat tops
	// above name only those.
	args := append([]string{"tool", "pprof", "-peek", `^runtime\.memmove$|^internal/runtime/syscall/linux\.Syscall6$|^runtime\.memclrNoHeapPointers$`}, pf.cpu...)
	out, err := exec.CommandContext(ctx, goTool(), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("go tool pprof -peek: %v: %s", err, out)
	}
	fmt.Fprintf(s.out, "\n### %s: CPU, callers of memmove, Syscall6 and memclr\n\n```\n%s```\n", name, trimPprof(string(out)))
	return nil
}

func goTool() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}

// trimPprof drops pprof's File/Type/Time preamble lines, keeping the
// "Showing nodes" summary and the table.
func trimPprof(s string) string {
	var keep []string
	for line := range strings.SplitSeq(s, "\n") {
		if strings.HasPrefix(line, "File:") || strings.HasPrefix(line, "Build ID:") || strings.HasPrefix(line, "Time:") ||
			strings.HasPrefix(line, "Duration:") {
			continue
		}
		keep = append(keep, line)
	}
	return strings.TrimLeft(strings.Join(keep, "\n"), "\n")
}

func fetchProfile(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %s: %s", url, resp.Status, b)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
