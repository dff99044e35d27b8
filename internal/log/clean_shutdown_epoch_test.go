package log

import (
	"os"
	"path/filepath"
	"testing"
)

// TestCleanShutdownBrokerEpoch: a clean Close writes the broker epoch into
// every log.dir's clean-shutdown marker and the next Manager reads it back;
// a missing marker (an unclean shutdown) or markers that disagree give -1.
func TestCleanShutdownBrokerEpoch(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	open := func() *Manager {
		t.Helper()
		m, err := NewManager(ManagerConfig{Dirs: dirs})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := open()
	if got := m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("first start: previous epoch %d, want -1", got)
	}
	m.SetBrokerEpoch(42)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	m = open()
	if got := m.PreviousBrokerEpoch(); got != 42 {
		t.Fatalf("after a clean shutdown: previous epoch %d, want 42", got)
	}
	m.SetBrokerEpoch(43)
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dirs[1], CleanShutdownFileName)); err != nil {
		t.Fatal(err)
	}
	m = open()
	defer m.Close()
	if got := m.PreviousBrokerEpoch(); got != -1 {
		t.Fatalf("with a marker missing: previous epoch %d, want -1", got)
	}
}
