package main

// Syncs of a kbroker run: the storage counters its brokers export on
// /metrics (kbroker_storage_*), read as the clock starts and when the run
// ends, so that a durable-acks run (w2-durable, flush.messages=1) says how
// many fsyncs per second its acknowledgements cost.

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// syncCounts are the brokers' storage sync counters, summed, and the share
// path's request and state-write counters (the queue workloads).
type syncCounts struct {
	DataSyncs, DirSyncs, Rounds, LogFlushes float64
	// ShareFetches and ShareAcks count ShareFetch and ShareAcknowledge
	// requests; StateRecords the records the share coordinators wrote to
	// __share_group_state (one per state write they committed).
	ShareFetches, ShareAcks, StateRecords float64
	// ShareFetchSeconds is the ShareFetch requests' time from arrival to
	// response written, summed.
	ShareFetchSeconds float64
	// Events are the error codes the brokers answered and the
	// transactions they committed (kbroker_request_errors_total,
	// kbroker_transactions_committed_total), by series: a transactional
	// run's retries per transaction.
	Events map[string]float64 `json:",omitempty"`
}

func (a syncCounts) minus(b syncCounts) syncCounts {
	d := syncCounts{a.DataSyncs - b.DataSyncs, a.DirSyncs - b.DirSyncs, a.Rounds - b.Rounds, a.LogFlushes - b.LogFlushes,
		a.ShareFetches - b.ShareFetches, a.ShareAcks - b.ShareAcks, a.StateRecords - b.StateRecords, a.ShareFetchSeconds - b.ShareFetchSeconds, nil}
	for k, v := range a.Events {
		if v -= b.Events[k]; v != 0 {
			if d.Events == nil {
				d.Events = map[string]float64{}
			}
			d.Events[k] = v
		}
	}
	return d
}

func (a syncCounts) plus(b syncCounts) syncCounts {
	s := syncCounts{a.DataSyncs + b.DataSyncs, a.DirSyncs + b.DirSyncs, a.Rounds + b.Rounds, a.LogFlushes + b.LogFlushes,
		a.ShareFetches + b.ShareFetches, a.ShareAcks + b.ShareAcks, a.StateRecords + b.StateRecords, a.ShareFetchSeconds + b.ShareFetchSeconds, nil}
	for _, events := range []map[string]float64{a.Events, b.Events} {
		for k, v := range events {
			if s.Events == nil {
				s.Events = map[string]float64{}
			}
			s.Events[k] += v
		}
	}
	return s
}

// eventPrefixes are the series scraped into Events.
var eventPrefixes = []string{"kbroker_request_errors_total{", "kbroker_transactions_"}

// syncMetrics maps the exported series to the fields they add to.
var syncMetrics = map[string]func(*syncCounts) *float64{
	`kbroker_storage_syncs_total{kind="data"}`:  func(c *syncCounts) *float64 { return &c.DataSyncs },
	`kbroker_storage_syncs_total{kind="dir"}`:   func(c *syncCounts) *float64 { return &c.DirSyncs },
	"kbroker_storage_group_commit_rounds_total": func(c *syncCounts) *float64 { return &c.Rounds },
	"kbroker_storage_log_flushes_total":         func(c *syncCounts) *float64 { return &c.LogFlushes },
	"kbroker_share_state_records_written_total": func(c *syncCounts) *float64 { return &c.StateRecords },
}

// requestMetrics are the request counters summed over their versions, by
// series prefix.
var requestMetrics = map[string]func(*syncCounts) *float64{
	`kbroker_requests_total{api="ShareFetch",`:               func(c *syncCounts) *float64 { return &c.ShareFetches },
	`kbroker_requests_total{api="ShareAcknowledge",`:         func(c *syncCounts) *float64 { return &c.ShareAcks },
	`kbroker_request_duration_seconds_sum{api="ShareFetch",`: func(c *syncCounts) *float64 { return &c.ShareFetchSeconds },
}

// scrapeSyncs sums the sync counters of the brokers at addrs.
func scrapeSyncs(ctx context.Context, addrs []string) (syncCounts, error) {
	var sum syncCounts
	for _, addr := range addrs {
		c, err := scrapeOne(ctx, addr)
		if err != nil {
			return syncCounts{}, err
		}
		sum = sum.plus(c)
	}
	return sum, nil
}

func scrapeOne(ctx context.Context, addr string) (syncCounts, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		return syncCounts{}, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return syncCounts{}, fmt.Errorf("scraping %s: %w", addr, err)
	}
	defer resp.Body.Close()
	var c syncCounts
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		if field := syncMetrics[name]; field != nil {
			*field(&c) = v
			continue
		}
		for _, p := range eventPrefixes {
			if strings.HasPrefix(name, p) {
				if c.Events == nil {
					c.Events = map[string]float64{}
				}
				c.Events[name] = v
			}
		}
		if strings.HasPrefix(name, "kbroker_request") {
			for prefix, field := range requestMetrics {
				if strings.HasPrefix(name, prefix) {
					*field(&c) += v
				}
			}
		}
	}
	return c, sc.Err()
}

// perSec is a count over the run's timed part.
func (r loadResult) perSec(n float64) float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return n / r.Elapsed.Seconds()
}
