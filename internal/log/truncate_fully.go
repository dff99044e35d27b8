package log

// TruncateFullyAndStartAt deletes every segment and starts the log over,
// empty, at offset: log start, log end, high watermark and recovery point all
// move there (Kafka's UnifiedLog.truncateFullyAndStartAt). A metadata log
// follower does this when it installs a snapshot beyond its log.
func (l *Log) TruncateFullyAndStartAt(offset int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return ErrClosed
	}
	if err := l.OfflineError(); err != nil {
		return err
	}
	return l.checkIO(l.truncateFullyAndStartAtLocked(offset))
}
