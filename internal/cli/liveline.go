package cli

import (
	"fmt"
	"io"
	"time"
)

// liveLine redraws a status line in place twice a second while out is a
// terminal (live), until stopped: the progress of produce and bench.
type liveLine struct {
	out   io.Writer
	live  bool
	began time.Time
	stopc chan struct{}
	done  chan struct{}
}

// startLiveLine starts the redraw goroutine; stop ends it.
func startLiveLine(out io.Writer, live bool, line func(elapsed time.Duration) string) *liveLine {
	l := &liveLine{out: out, live: live, began: time.Now(), stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		if !live {
			<-l.stopc
			return
		}
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-l.stopc:
				return
			case <-t.C:
				fmt.Fprintf(out, "\r%s\x1b[K", line(time.Since(l.began)))
			}
		}
	}()
	return l
}

// stop ends the redraws, clears the line and returns the time since start.
func (l *liveLine) stop() time.Duration {
	close(l.stopc)
	<-l.done
	if l.live {
		fmt.Fprint(l.out, "\r\x1b[K")
	}
	return time.Since(l.began)
}
