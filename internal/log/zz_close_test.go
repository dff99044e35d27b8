package log

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
)

func TestZZClose(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("ZZN"))
	dir := t.TempDir()
	m, err := NewManager(ManagerConfig{Dirs: []string{dir}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		l, err := m.GetOrCreate(TopicPartition{fmt.Sprint("t", i/1000), int32(i % 1000)}, [16]byte{byte(i/1000 + 1)}, testConfig())
		if err != nil {
			t.Fatal(err)
		}
		fillLog(t, l, 1, 1, 50, 1000)
	}
	t0 := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("close %d: %v", n, time.Since(t0))
	t0 = time.Now()
	m, err = NewManager(ManagerConfig{Dirs: []string{dir}, Default: testConfig(), Logger: testLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("open %d: %v", n, time.Since(t0))
	m.Close()
}
