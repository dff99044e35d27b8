package coordinator

import (
	"context"
	"reflect"
	"testing"
	"time"
)

// positioned is a recorder that is told each record's offset.
type positioned struct{ r *recorder }

func (p positioned) Replay(time.Time, []byte, []byte) error {
	p.r.note("replay without an offset")
	return nil
}
func (p positioned) ReplayAt(_ time.Time, offset int64, key, value []byte) error {
	p.r.note("%d %s=%s", offset, key, value)
	return nil
}
func (p positioned) Tick(time.Time, *Writer) {}
func (p positioned) NextDeadline() time.Time { return time.Time{} }
func (p positioned) Unload()                 {}

// TestPositionedShard: Written tells a shard where its batch ended, loading
// feeds a PositionedShard each record's offset, and DeleteRecordsBefore
// (after commit) removes the records before an offset from what the next
// load replays.
func TestPositionedShard(t *testing.T) {
	m, img := testLeader(t)
	r := loaded(t, m, img, positioned{&recorder{}})
	ctx := context.Background()
	var ends []int64
	if err := r.Do(ctx, 0, func(_ Shard, w *Writer) {
		for _, batch := range [][]Record{{{Key: []byte("a"), Value: []byte("1")}, {Key: []byte("b"), Value: []byte("2")}}, {{Key: []byte("c"), Value: []byte("3")}}} {
			if err := w.Write(batch); err != nil {
				t.Errorf("write: %v", err)
			}
			ends = append(ends, w.Written())
		}
	}); err != nil {
		t.Fatal(err)
	}
	if want := []int64{2, 3}; !reflect.DeepEqual(ends, want) {
		t.Errorf("Written after each batch: %v, want %v", ends, want)
	}
	r.Close()

	reloaded := &recorder{}
	r = loaded(t, m, img, positioned{reloaded})
	if want := []string{"0 a=1", "1 b=2", "2 c=3"}; !reflect.DeepEqual(reloaded.got(), want) {
		t.Errorf("reload fed %q, want %q", reloaded.got(), want)
	}
	deleted := make(chan error, 1)
	if err := r.Do(ctx, 0, func(_ Shard, w *Writer) {
		w.AfterCommit(func(err error) {
			if err == nil {
				err = w.DeleteRecordsBefore(2)
			}
			deleted <- err
		})
	}); err != nil {
		t.Fatal(err)
	}
	if err := <-deleted; err != nil {
		t.Fatal(err)
	}
	r.Close()

	pruned := &recorder{}
	r = loaded(t, m, img, positioned{pruned})
	defer r.Close()
	if want := []string{"2 c=3"}; !reflect.DeepEqual(pruned.got(), want) {
		t.Errorf("reload after deleting records before 2 fed %q, want %q", pruned.got(), want)
	}
}
