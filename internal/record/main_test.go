package record

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no test leaves a goroutine behind: the pooled zstd and
// lz4 coders must run in the caller's goroutine, and kfake must shut down.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
