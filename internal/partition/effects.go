package partition

// Effects is what a partition operation leaves its driver to do. The
// partition decides under its lock and returns; the replica manager, which
// owns the goroutines, the connection to the controller and the
// purgatories, carries the effects out. Nothing in a partition calls up into
// the replica manager, so every decision can be tested by its return value.
//
// The high watermark itself is no effect: the partition has already stored
// a raised one in the log (the only place it is kept) when the operation
// returns, so a request woken by HighWatermarkIncreased reads the new value.
type Effects struct {
	// HighWatermarkIncreased: the high watermark rose. The caller completes
	// the delayed operations waiting on the partition: acks=all produces,
	// fetches bounded by the high watermark or the last stable offset,
	// coordinator writes.
	HighWatermarkIncreased bool
	// AlterPartition is an ISR change to send to the controller, already
	// marked in flight (no other is proposed until it is answered). The
	// caller sends it without blocking the partition and hands the answer
	// to OnAlterPartitionResponse; when that answer returns it again, the
	// caller sends it again after a backoff.
	AlterPartition *AlterPartitionProposal
	// ISRCommitted is the kind of ISR change the controller's answer made
	// the committed ISR (IsrExpandsPerSec, IsrShrinksPerSec), 0 for none.
	ISRCommitted ISRChange
}
