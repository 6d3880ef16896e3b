package main

// The profiling pass: kbroker has no pprof endpoint, so the suite runs
// bench/pprofbroker (kbroker's broker package plus net/http/pprof) under w1
// and w2, takes a CPU profile and a delta allocation profile of every
// broker over the middle of the run, and prints go tool pprof's tops.

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
	"time"
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
	profDir := filepath.Join(s.cfg.Out, "profiles")
	if err := os.MkdirAll(profDir, 0o755); err != nil {
		return err
	}
	lc := w.load
	lc.Brokers = c.addrs
	lc.Duration = max(s.cfg.Duration, 4*time.Second) + 2*time.Second
	secs := int((lc.Duration - 3*time.Second).Seconds())
	// The topic first, so that the profiles cover producing, not waiting
	// for leaders.
	if err := ensureTopic(ctx, lc); err != nil {
		return err
	}
	loadDone := make(chan error, 1)
	var res loadResult
	go func() {
		var err error
		res, err = runLoad(ctx, lc)
		loadDone <- err
	}()
	time.Sleep(2 * time.Second) // topic creation, connections, warm-up
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	var cpuFiles, allocFiles []string
	for i, addr := range c.pprof {
		for _, kind := range []string{"profile", "allocs"} {
			file := filepath.Join(profDir, fmt.Sprintf("%s-%s-node%d.pb.gz", name, map[string]string{"profile": "cpu", "allocs": "allocs"}[kind], i+1))
			if kind == "profile" {
				cpuFiles = append(cpuFiles, file)
			} else {
				allocFiles = append(allocFiles, file)
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := fetchProfile(ctx, fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", addr, kind, secs), file); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	if err := <-loadDone; err != nil {
		return fmt.Errorf("load under profiling: %w", err)
	}
	if len(errs) > 0 {
		return errs[0]
	}
	fmt.Fprintf(s.out, "\n## Profiles of kbroker under %s (%d s of a %.0f s run, %d broker(s) merged)\n\n",
		name, secs, lc.Duration.Seconds(), len(c.pprof))
	fmt.Fprintf(s.out, "Load while profiling: %s\n\nFiles: %s, %s\n", res, strings.Join(cpuFiles, " "), strings.Join(allocFiles, " "))
	for _, v := range []struct {
		title, index, sort string
		files              []string
	}{
		{"CPU, top 15 by flat time", "", "-flat", cpuFiles},
		{"CPU, top 15 by cumulative time", "", "-cum", cpuFiles},
		{"Allocations, top 15 by bytes allocated (flat)", "alloc_space", "-flat", allocFiles},
		{"Allocations, top 15 by objects allocated (flat)", "alloc_objects", "-flat", allocFiles},
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
	args := append([]string{"tool", "pprof", "-peek", `^runtime\.memmove$|^internal/runtime/syscall/linux\.Syscall6$|^runtime\.memclrNoHeapPointers$`}, cpuFiles...)
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
