// Package sharetest holds test doubles the share-group packages share: an
// in-memory internal-topic partition (MemLog) with fault injection. Only
// tests import it.
package sharetest

import (
	"context"
	"slices"
	"sync"

	"github.com/kbroker/kbroker/broker/group"
)

// Logged is a record of a MemLog with its offset.
type Logged struct {
	Offset int64
	group.Record
}

// MemLog is an in-memory partition of an internal topic: appends get
// consecutive offsets, DeleteRecordsBefore moves the log start. Safe for
// concurrent use.
type MemLog struct {
	mu       sync.Mutex
	records  []Logged
	next     int64
	logStart int64
	appends  int
	failNext error
	block    chan struct{}
	entered  chan struct{}
}

// Append stores records as one batch and returns the first offset.
func (l *MemLog) Append(ctx context.Context, records []group.Record) (int64, error) {
	l.mu.Lock()
	block, entered := l.block, l.entered
	l.mu.Unlock()
	if entered != nil {
		entered <- struct{}{}
	}
	if block != nil {
		select {
		case <-block:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.failNext; err != nil {
		l.failNext = nil
		return 0, err
	}
	l.appends++
	base := l.next
	for _, r := range records {
		c := group.Record{Key: slices.Clone(r.Key)}
		if r.Value != nil {
			c.Value = append([]byte{}, r.Value...)
		}
		l.records = append(l.records, Logged{Offset: l.next, Record: c})
		l.next++
	}
	return base, nil
}

// DeleteRecordsBefore drops the records below off.
func (l *MemLog) DeleteRecordsBefore(_ context.Context, off int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.records = slices.DeleteFunc(l.records, func(r Logged) bool { return r.Offset < off })
	l.logStart = max(l.logStart, off)
	return nil
}

// Records returns a copy of the records from the log start.
func (l *MemLog) Records() []Logged {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.records)
}

// Len is the number of records kept.
func (l *MemLog) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.records)
}

// LogStart is the log start offset.
func (l *MemLog) LogStart() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.logStart
}

// Appends counts the successful appends.
func (l *MemLog) Appends() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.appends
}

// FailNext makes the next append fail with err.
func (l *MemLog) FailNext(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.failNext = err
}

// Block makes appends wait until the returned function is called; entered
// receives a value when an append starts waiting.
func (l *MemLog) Block() (entered <-chan struct{}, release func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	b, e := make(chan struct{}), make(chan struct{}, 16)
	l.block, l.entered = b, e
	var once sync.Once
	return e, func() {
		once.Do(func() {
			l.mu.Lock()
			l.block, l.entered = nil, nil
			l.mu.Unlock()
			close(b)
		})
	}
}
