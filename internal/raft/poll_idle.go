package raft

import (
	"sync"
	"time"
)

// pollIdleWindow is one sample of the poll-idle ratio; the ratio covers the
// current sample and the one before, 30 to 60 seconds, as Kafka's metrics
// average over two 30 s samples by default.
const pollIdleWindow = 30 * time.Second

// pollIdle measures raft-metrics poll-idle-ratio-avg: the share of its time
// the quorum's work loop spends waiting for something to do rather than
// handling it. Kafka's raft IO thread is idle while it waits in poll; here
// the voter's goroutine is busy from a select returning until it selects
// again, an observer while it applies what it fetched (waiting for the
// leader's answer is its idle time), and a single voter while it appends.
// It is time-weighted: a busy second counts as much as an idle one.
type pollIdle struct {
	mu        sync.Mutex
	cur, prev idleSample
}

type idleSample struct {
	start time.Time // zero: no sample
	busy  time.Duration
}

func newPollIdle(now time.Time) *pollIdle {
	return &pollIdle{cur: idleSample{start: now}}
}

// roll starts a new sample once the current one is a window old.
func (p *pollIdle) roll(now time.Time) {
	switch age := now.Sub(p.cur.start); {
	case age >= 2*pollIdleWindow:
		// Nothing was busy for a whole sample: the previous one is empty.
		p.prev = idleSample{start: now.Add(-pollIdleWindow)}
		p.cur = idleSample{start: now}
	case age >= pollIdleWindow:
		p.prev = p.cur
		p.cur = idleSample{start: p.cur.start.Add(pollIdleWindow)}
	}
}

// busy records a stretch of work, from from to to.
func (p *pollIdle) busy(from, to time.Time) {
	if p == nil || !to.After(from) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll(to)
	p.cur.busy += to.Sub(from)
}

// ratio is the idle share of the time from the previous sample's start (or
// the meter's, in its first window) to now, in [0, 1].
func (p *pollIdle) ratio(now time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.roll(now)
	from := p.cur.start
	if !p.prev.start.IsZero() {
		from = p.prev.start
	}
	span := now.Sub(from)
	if span <= 0 {
		return 1
	}
	idle := 1 - float64(p.prev.busy+p.cur.busy)/float64(span)
	return min(max(idle, 0), 1)
}
