package main

// The connections workload's idle connections: opened before the run's
// producer connects, each having completed ApiVersions and then silent, kept
// open until the run ends. What the brokers' memory and descriptors grew by
// while they were opened, over their number, is a connection's cost; the
// suite measures it on a fresh cluster of the target, because a broker that
// has run a load reuses the memory it freed (kfake: 15.5 KiB per connection
// fresh, 2.5 KiB after one small run), and that would make the figure depend
// on what ran before.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// idleCost is what opening the idle connections cost the brokers, summed
// over their processes.
type idleCost struct {
	Conns   int
	Anon    int64 // RssAnon growth, bytes
	RSS     int64 // VmRSS growth, bytes
	Sockets int   // growth of the brokers' open sockets
}

// AnonPerConn is the anonymous memory one idle connection costs, in bytes.
func (c idleCost) AnonPerConn() float64 { return perUnit(c.Anon, c.Conns) }

// RSSPerConn is the resident memory one idle connection costs, in bytes.
func (c idleCost) RSSPerConn() float64 { return perUnit(c.RSS, c.Conns) }

func perUnit(total int64, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(total) / float64(n)
}

// openIdleConns opens n connections over the brokers in turn and measures
// what the processes pids grew by. The caller closes the connections.
func openIdleConns(ctx context.Context, brokers []string, n int, pids []int) ([]*rawConn, idleCost, error) {
	before := readHolds(pids)
	var conns []*rawConn
	for i := range n {
		rc, err := dialRaw(ctx, brokers[i%len(brokers)])
		if err != nil {
			closeRaw(conns)
			return nil, idleCost{}, fmt.Errorf("idle connection %d of %d: %w", i+1, n, err)
		}
		conns = append(conns, rc)
	}
	return conns, holdGrowth(before, readHolds(pids), n), nil
}

// holdGrowth sums what each process grew by from before to after.
func holdGrowth(before, after []procHold, conns int) idleCost {
	c := idleCost{Conns: conns}
	for i := range min(len(before), len(after)) {
		c.Anon += after[i].Anon - before[i].Anon
		c.RSS += after[i].RSS - before[i].RSS
		c.Sockets += after[i].Sockets - before[i].Sockets
	}
	return c
}

func closeRaw(conns []*rawConn) {
	for _, c := range conns {
		c.Close()
	}
}

// freshIdleCost starts a fresh cluster of target t, opens n idle
// connections to it before anything else, and returns what they cost it.
func (s *suite) freshIdleCost(ctx context.Context, t targetKind, brokers, n int) (idleCost, error) {
	dir := filepath.Join(s.cfg.Out, "runs", fmt.Sprintf("%s-idle-conns", t))
	os.RemoveAll(dir)
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	c, err := s.start(ctx, startOpts{kind: t, brokers: brokers, dir: dir, kbroker: s.bins(t)})
	if err != nil {
		return idleCost{}, err
	}
	defer c.stop()
	conns, cost, err := openIdleConns(ctx, c.addrs, n, c.pids())
	closeRaw(conns)
	return cost, err
}
