package log

import (
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"gregor/internal/record"
)

// TestCleanerCrashDuringSwap stops a clean at every step of its segment swap,
// as kill -9 would, leaves the in-memory log as it is, and reopens the
// directory with recovery. The group spans several segments, so the loader's
// multi-segment swap completion is exercised. Before the .swap rename the log
// must be the original one; from it on, the cleaned one (the same as a clean
// of a copy that was not interrupted); no temporary file may stay.
func TestCleanerCrashDuringSwap(t *testing.T) {
	cases := []struct {
		name    string
		step    swapStep
		nth     int // stop at the nth time the step is reached
		cleaned bool
	}{
		{"cleaned files written", swapStepCleaned, 1, false},
		{"swap with old segments present", swapStepSwap, 1, true},
		{"first old segment deleted", swapStepOldDeleted, 1, true},
		{"all old segments deleted", swapStepOldDeleted, 6, true},
		{"log renamed, indexes still swap", swapStepLogRenamed, 1, true},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			cfg := compactConfig()
			l, dir := openTestLog(t, cfg)
			codecs := []record.Codec{record.CodecNone, record.CodecZstd}
			for i := 0; i < 60; i++ {
				appendKeyed(t, l, testNowMs+int64(i), codecs[i%2], noProducer,
					val(fmt.Sprint("k", i%7), fmt.Sprint("value-", i)), tomb(fmt.Sprint("t", i%3)))
				if i%10 == 9 {
					if err := l.Roll(); err != nil {
						t.Fatal(err)
					}
				}
			}
			if segs, _ := l.snapshot(); len(segs) != 7 {
				t.Fatalf("%d segments, want 6 full and the active one", len(segs))
			}
			l.SetHighWatermark(l.LogEndOffset())
			if err := l.Flush(); err != nil {
				t.Fatal(err)
			}
			original, _ := readLog(t, l)
			leo := l.LogEndOffset()

			// The reference: the same clean, not interrupted, on a copy.
			refDir := filepath.Join(t.TempDir(), "logs", "topic-0")
			copyDir(t, dir, refDir)
			ref, err := Open(refDir, cfg, 0, 0, testLogger())
			if err != nil {
				t.Fatal(err)
			}
			ref.SetHighWatermark(ref.LogEndOffset())
			newTestCleaner(t, 1<<20).cleanFully(t, ref, testNowMs)
			cleaned, _ := readLog(t, ref)
			ref.Close()
			if len(cleaned) >= len(original) {
				t.Fatalf("reference clean removed nothing")
			}

			tc := newTestCleaner(t, 1<<20)
			seen := 0
			tc.c.crashAt = func(step swapStep) bool {
				if step == tt.step {
					seen++
					return seen == tt.nth
				}
				return false
			}
			if _, err := tc.tryClean(t.Context(), l, testNowMs); !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("clean returned %v, want the simulated crash", err)
			}
			// The crashed process's log is abandoned, not closed.
			reopened, err := Open(dir, cfg, 0, 0, testLogger())
			if err != nil {
				t.Fatalf("reopen after crash: %v", err)
			}
			defer reopened.Close()
			if got := reopened.LogEndOffset(); got != leo {
				t.Fatalf("log end offset %d after recovery, want %d", got, leo)
			}
			if tmp := tempFiles(t, dir); len(tmp) != 0 {
				t.Fatalf("temporary files left after recovery: %v", tmp)
			}
			got, _ := readLog(t, reopened)
			want := original
			if tt.cleaned {
				want = cleaned
			}
			if fmt.Sprint(recordsOf(got)) != fmt.Sprint(recordsOf(want)) {
				t.Fatalf("after recovery:\n%v\nwant:\n%v", recordsOf(got), recordsOf(want))
			}
			// The recovered log cleans on to the same result.
			reopened.SetHighWatermark(reopened.LogEndOffset())
			newTestCleaner(t, 1<<20).cleanFully(t, reopened, testNowMs)
			again, _ := readLog(t, reopened)
			if fmt.Sprint(recordsOf(again)) != fmt.Sprint(recordsOf(cleaned)) {
				t.Fatalf("cleaning the recovered log:\n%v\nwant:\n%v", recordsOf(again), recordsOf(cleaned))
			}
		})
	}
}

// recordsOf renders records as offset:key=value for comparisons.
func recordsOf(recs []readRec) []string {
	out := make([]string, 0, len(recs))
	for _, r := range recs {
		v := string(r.value)
		if r.value == nil {
			v = "<tombstone>"
		}
		out = append(out, fmt.Sprintf("%d:%s=%s", r.offset, r.key, v))
	}
	return out
}

// TestCleanerCrashGroupEndingEarly crashes the swap of a group whose cleaned
// segment ends before the group's last old segment starts (all of that
// segment's records are superseded later in the log). Recovery then keeps
// that old segment beside the swapped-in one: no record is lost, and the
// newest value of every key is there.
func TestCleanerCrashGroupEndingEarly(t *testing.T) {
	for _, step := range []swapStep{swapStepSwap, swapStepOldDeleted, swapStepLogRenamed} {
		t.Run(fmt.Sprint("step", step), func(t *testing.T) {
			cfg := compactConfig()
			cfg.SegmentBytes = 1700
			l, dir := openTestLog(t, cfg)
			segment := func(keys ...string) {
				for _, k := range keys {
					appendKeyed(t, l, testNowMs, record.CodecNone, noProducer, val(k, k+"-"+fmt.Sprint(l.LogEndOffset())))
				}
				if err := l.Roll(); err != nil {
					t.Fatal(err)
				}
			}
			// Groups of two segments: [a b] [c d]; b's keys are all
			// rewritten in d, so the first cleaned segment ends inside a.
			segment("a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9")
			segment("b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9")
			segment("c0", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c9")
			segment("b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "b8", "b9")
			l.SetHighWatermark(l.LogEndOffset())
			original, _ := readLog(t, l)
			tc := newTestCleaner(t, 1<<20)
			tc.c.crashAt = func(s swapStep) bool { return s == step }
			if _, err := tc.tryClean(t.Context(), l, testNowMs); !errors.Is(err, errSimulatedCrash) {
				t.Fatalf("clean returned %v, want the simulated crash", err)
			}
			reopened, err := Open(dir, cfg, 0, 0, testLogger())
			if err != nil {
				t.Fatalf("reopen after crash: %v", err)
			}
			defer reopened.Close()
			got, _ := readLog(t, reopened)
			if fmt.Sprint(latestValues(got)) != fmt.Sprint(latestValues(original)) {
				t.Fatalf("latest values after recovery %v, want %v", latestValues(got), latestValues(original))
			}
			if step == swapStepSwap && (len(got) == 0 || got[10].offset != 10) {
				t.Fatalf("the old segment at 10 is not back beside the cleaned one: %v", recordsOf(got))
			}
			if len(tempFiles(t, dir)) != 0 || reopened.LogEndOffset() != l.LogEndOffset() {
				t.Fatalf("temporary files %v, log end %d want %d", tempFiles(t, dir), reopened.LogEndOffset(), l.LogEndOffset())
			}
		})
	}
}

func latestValues(recs []readRec) map[string]string {
	m := map[string]string{}
	for _, r := range recs {
		m[string(r.key)] = string(r.value)
	}
	return m
}
