package log

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"gregor/internal/record"
)

// ManagerConfig holds the broker-level log settings.
type ManagerConfig struct {
	Dirs    []string // log.dirs
	Default Config   // topic defaults from the broker config
	// FlushSchedulerIntervalMs is log.flush.scheduler.interval.ms, how often
	// flush.ms is checked; the check runs at least every second regardless.
	FlushSchedulerIntervalMs int64
	// FlushOffsetCheckpointIntervalMs is log.flush.offset.checkpoint.interval.ms.
	FlushOffsetCheckpointIntervalMs int64
	// FlushStartOffsetCheckpointIntervalMs is log.flush.start.offset.checkpoint.interval.ms.
	FlushStartOffsetCheckpointIntervalMs int64
	// FileDeleteDelayMs is how long a deleted partition's directory stays
	// (renamed *-delete) before removal; zero means the topic default.
	FileDeleteDelayMs int64
	// RetentionCheckIntervalMs is log.retention.check.interval.ms, how often
	// retention deletes old segments (retention.go); zero means 300000.
	RetentionCheckIntervalMs int64
	Logger                   *slog.Logger
	// Cleaner is the log cleaner's settings (cleaner_manager.go); the zero
	// value runs none.
	Cleaner CleanerConfig
	// ProducerIDExpirationMs is producer.id.expiration.ms (zero: 86400000);
	// ProducerIDExpirationCheckIntervalMs is
	// producer.id.expiration.check.interval.ms (zero: 600000), how often
	// expired producers are removed (producer_state_log.go).
	ProducerIDExpirationMs              int64
	ProducerIDExpirationCheckIntervalMs int64
	// RecoveryThreadsPerDataDir is num.recovery.threads.per.data.dir, how
	// many logs of one log.dir load at once at start; zero means 2.
	RecoveryThreadsPerDataDir int
	// MaxOpenFiles is gregor.log.max.open.files, the budget of segment
	// files open at once across the log.dirs (file_cache.go); zero means
	// half of RLIMIT_NOFILE, at most DefaultMaxOpenFiles.
	MaxOpenFiles int
	// DecompressionMemory is gregor.decompression.memory.bytes, the
	// budget of decompressed data produce validation holds at once across
	// the logs (record.DecompressionBudget); zero means
	// record.DefaultDecompressionMemory.
	DecompressionMemory int64
}

// Manager owns every partition log in the broker's log.dirs (Kafka's
// LogManager): it loads them at start, creates and deletes them, writes the
// recovery-point and log-start-offset checkpoints, flushes by flush.ms, and
// marks a clean shutdown on Close.
type Manager struct {
	cfg    ManagerConfig
	logger *slog.Logger

	mu     sync.Mutex
	dirs   []*logDir
	logs   map[TopicPartition]*managedLog
	doomed []doomedDir // directories renamed *-delete, removed after the delay
	closed bool
	// creating holds the partitions whose logs GetOrCreate is creating
	// outside mu (their files and fsyncs), so that many partitions are
	// created at once; creations counts them for Close.
	creating  map[TopicPartition]*creation
	creations sync.WaitGroup

	// offlinePartitions are the partitions found in a log.dir that failed
	// to load, by that directory (guarded by mu).
	offlinePartitions map[TopicPartition]string

	checkpointMu sync.Mutex // serializes checkpoint file writes

	// files is the descriptor budget every log's segment files share.
	files *fileCache
	// decompression is the memory budget every log's produce validation
	// shares.
	decompression *record.DecompressionBudget

	// previousBrokerEpoch is the broker epoch the clean-shutdown markers
	// of every log.dir named when the logs were loaded, -1 when one had
	// none (an unclean shutdown) or they disagree; brokerEpoch is the
	// epoch Close writes into the markers (-1 until SetBrokerEpoch).
	previousBrokerEpoch int64
	brokerEpoch         atomic.Int64

	// cleaner compacts logs with cleanup.policy=compact; nil when
	// log.cleaner.enable is off.
	cleaner *logCleaner

	cancel context.CancelFunc
	wg     sync.WaitGroup

	// syncFS is syncFileSystem; tests make it fail.
	syncFS func(dir string) error
}

type logDir struct {
	path string
	err  error // set when the directory is unusable at start (Kafka's offline log dir)
	// health goes offline at the first I/O error of any log in the directory.
	health *dirHealth
}

// offline is nil for a usable directory, else why it is not.
func (d *logDir) offline() error {
	if d.err != nil {
		return d.err
	}
	return d.health.offline()
}

type managedLog struct {
	log *Log
	dir *logDir
	// claimed is set once the log is opened through GetOrCreate with its
	// topic's settings; retention leaves a loaded log alone until then.
	claimed bool
	topicID [16]byte
	hasID   bool
}

type doomedDir struct {
	path     string
	deadline time.Time
}

// DirDescription describes one log.dir for DescribeLogDirs.
type DirDescription struct {
	Path        string
	Err         error
	TotalBytes  int64
	UsableBytes int64
	Partitions  []PartitionSize
}

// PartitionSize is one partition's size in a log.dir.
type PartitionSize struct {
	TP   TopicPartition
	Size int64
}

const (
	deleteDirSuffix = "-delete"
	futureDirSuffix = "-future"
	strayDirSuffix  = "-stray"
	// metadataTopic's log belongs to the Raft layer, which opens it itself.
	metadataTopic = "__cluster_metadata"
)

// ErrInconsistentTopicID is INCONSISTENT_TOPIC_ID: the partition directory
// belongs to another topic with the same name.
var ErrInconsistentTopicID = errors.New("inconsistent topic id")

// NewManager loads every log in cfg.Dirs. Missing directories are created.
// Each log is opened with the directory's recovery point and log start
// offset checkpoints; the clean-shutdown marker decides whether it needs
// recovery, and is removed once the directory is loaded so that a later crash
// means recovery.
func NewManager(cfg ManagerConfig) (*Manager, error) {
	if len(cfg.Dirs) == 0 {
		return nil, errors.New("log manager: no log.dirs")
	}
	cfg.Default = cfg.Default.withDefaults()
	if cfg.FlushSchedulerIntervalMs <= 0 {
		cfg.FlushSchedulerIntervalMs = math.MaxInt64
	}
	if cfg.FlushOffsetCheckpointIntervalMs <= 0 {
		cfg.FlushOffsetCheckpointIntervalMs = 60000
	}
	if cfg.FlushStartOffsetCheckpointIntervalMs <= 0 {
		cfg.FlushStartOffsetCheckpointIntervalMs = 60000
	}
	if cfg.FileDeleteDelayMs <= 0 {
		cfg.FileDeleteDelayMs = cfg.Default.FileDeleteDelayMs
	}
	if cfg.RetentionCheckIntervalMs <= 0 {
		cfg.RetentionCheckIntervalMs = 300000
	}
	if cfg.ProducerIDExpirationMs > 0 {
		cfg.Default.ProducerIDExpirationMs = cfg.ProducerIDExpirationMs
	}
	cfg.ProducerIDExpirationMs = cfg.Default.ProducerIDExpirationMs
	if cfg.ProducerIDExpirationCheckIntervalMs <= 0 {
		cfg.ProducerIDExpirationCheckIntervalMs = 600000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.RecoveryThreadsPerDataDir <= 0 {
		cfg.RecoveryThreadsPerDataDir = 2
	}
	if cfg.MaxOpenFiles <= 0 {
		cfg.MaxOpenFiles = defaultMaxOpenFiles()
	}
	if cfg.DecompressionMemory <= 0 {
		cfg.DecompressionMemory = record.DefaultDecompressionMemory
	}
	m := &Manager{cfg: cfg, logger: cfg.Logger, logs: map[TopicPartition]*managedLog{}, syncFS: syncFileSystem,
		creating: map[TopicPartition]*creation{}, files: newFileCache(cfg.MaxOpenFiles),
		decompression: record.NewDecompressionBudget(cfg.DecompressionMemory)}
	m.brokerEpoch.Store(-1)
	m.previousBrokerEpoch = previousBrokerEpoch(cfg.Dirs)
	healthy := 0
	for _, path := range cfg.Dirs {
		d := &logDir{path: filepath.Clean(path)}
		d.health = newDirHealth(d.path, m.logger)
		m.dirs = append(m.dirs, d)
		if err := os.MkdirAll(d.path, 0o755); err != nil {
			d.err = fmt.Errorf("create log dir: %w", err)
			m.logger.Error("log dir unusable", "dir", d.path, "err", d.err)
			continue
		}
		if err := m.loadDir(d); err != nil {
			if !isIOError(err) {
				m.closeLogs()
				return nil, err
			}
			// As Kafka's loadLogs: an I/O error takes this directory
			// offline; the others are served.
			m.loadFailed(d, err)
			continue
		}
		healthy++
	}
	if healthy == 0 {
		return nil, fmt.Errorf("log manager: no usable log dir among %v", cfg.Dirs)
	}
	if cfg.Cleaner.Enable {
		lc, err := newLogCleaner(m, cfg.Cleaner)
		if err != nil {
			m.closeLogs()
			return nil, fmt.Errorf("log manager: %w", err)
		}
		m.cleaner = lc
	}
	return m, nil
}

// loadDir opens every partition log under one log.dir.
func (m *Manager) loadDir(d *logDir) error {
	recoveryPoints, err := readCheckpoint(filepath.Join(d.path, RecoveryPointCheckpointFile))
	if err != nil {
		// As Kafka: a bad checkpoint means recovering everything.
		m.logger.Warn("resetting recovery points", "dir", d.path, "err", err)
		recoveryPoints = map[TopicPartition]int64{}
	}
	logStarts, err := readCheckpoint(filepath.Join(d.path, LogStartOffsetCheckpointFile))
	if err != nil {
		m.logger.Warn("resetting log start offsets", "dir", d.path, "err", err)
		logStarts = map[TopicPartition]int64{}
	}
	highWatermarks, err := readCheckpoint(filepath.Join(d.path, HighWatermarkCheckpointFile))
	if err != nil {
		m.logger.Warn("resetting high watermarks", "dir", d.path, "err", err)
		highWatermarks = map[TopicPartition]int64{}
	}
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return fmt.Errorf("list log dir %s: %w", d.path, err)
	}
	now := time.Now()
	var loads []*logLoad
	seen := map[TopicPartition]bool{}
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() {
			continue
		}
		path := filepath.Join(d.path, name)
		switch {
		case strings.HasSuffix(name, deleteDirSuffix):
			m.doomed = append(m.doomed, doomedDir{path: path, deadline: now.Add(m.fileDeleteDelay())})
			continue
		case strings.HasSuffix(name, futureDirSuffix), strings.HasSuffix(name, strayDirSuffix):
			m.logger.Warn("ignoring log directory", "dir", path)
			continue
		}
		tp, err := parseTopicPartition(name)
		if err != nil {
			m.logger.Warn("ignoring directory that is not a partition log", "dir", path, "err", err)
			continue
		}
		if tp.Topic == metadataTopic {
			continue
		}
		if other, ok := m.logs[tp]; ok {
			return fmt.Errorf("duplicate log directories for %s: %s and %s", tp, other.log.Dir(), path)
		}
		if seen[tp] {
			return fmt.Errorf("duplicate log directories for %s in %s", tp, d.path)
		}
		seen[tp] = true
		loads = append(loads, &logLoad{tp: tp, path: path})
	}
	shutdown := shutdownUnclean
	if _, err := os.Stat(filepath.Join(d.path, CleanShutdownFileName)); err == nil {
		shutdown = shutdownClean
	}
	m.openLogs(loads, recoveryPoints, logStarts, shutdown)
	var firstErr error
	for _, ld := range loads {
		if ld.err != nil {
			if firstErr == nil {
				firstErr = fmt.Errorf("load %s: %w", ld.tp, ld.err)
			}
			continue
		}
		l := ld.log
		l.health = d.health
		if hw, ok := highWatermarks[ld.tp]; ok {
			l.SetHighWatermark(hw) // bounded by the recovered log end
		}
		ml := &managedLog{log: l, dir: d}
		if ld.metaErr == nil {
			ml.topicID, ml.hasID = ld.topicID, true
		} else if !errors.Is(ld.metaErr, os.ErrNotExist) {
			m.logger.Warn("unreadable partition metadata", "dir", ld.path, "err", ld.metaErr)
		}
		// The caller closes the logs loaded so far when one fails.
		m.logs[ld.tp] = ml
	}
	if firstErr != nil {
		return firstErr
	}
	if err := os.Remove(filepath.Join(d.path, CleanShutdownFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove clean shutdown marker: %w", err)
	}
	return syncDir(d.path)
}

// logLoad is one partition log to open at start, and the outcome.
type logLoad struct {
	tp      TopicPartition
	path    string
	log     *Log
	err     error
	topicID [16]byte
	metaErr error
}

// openLogs opens the logs of one log.dir with
// num.recovery.threads.per.data.dir goroutines (Kafka's recovery thread
// pool): loading is mostly system calls and, after a crash, reading the
// segments past the recovery points, so threads overlap them.
func (m *Manager) openLogs(loads []*logLoad, recoveryPoints, logStarts map[TopicPartition]int64, shutdown shutdownState) {
	next := make(chan *logLoad)
	var wg sync.WaitGroup
	for range min(m.cfg.RecoveryThreadsPerDataDir, max(len(loads), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ld := range next {
				ld.log, ld.err = openLog(ld.path, m.cfg.Default, recoveryPoints[ld.tp], logStarts[ld.tp],
					m.logger.With("partition", ld.tp.String()), m.files, shutdown)
				if ld.err == nil {
					ld.log.decompression = m.decompression
					ld.topicID, ld.metaErr = readPartitionMetadata(ld.path)
				}
			}
		}()
	}
	for _, ld := range loads {
		next <- ld
	}
	close(next)
	wg.Wait()
}

func (m *Manager) fileDeleteDelay() time.Duration {
	return time.Duration(m.cfg.FileDeleteDelayMs) * time.Millisecond
}

// Start runs the background work until ctx is cancelled or Close: the flush
// scheduler (flush.ms per log), the checkpoint writers, and the removal of
// deleted segments and *-delete directories once their delay has passed.
func (m *Manager) Start(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	m.mu.Lock()
	if m.closed || m.cancel != nil {
		m.mu.Unlock()
		cancel()
		return
	}
	m.cancel = cancel
	m.mu.Unlock()
	tick := time.Second
	for _, ms := range []int64{m.cfg.FlushSchedulerIntervalMs, m.cfg.FlushOffsetCheckpointIntervalMs,
		m.cfg.FlushStartOffsetCheckpointIntervalMs, m.cfg.FileDeleteDelayMs} {
		tick = min(tick, msDuration(ms))
	}
	tick = max(tick, 10*time.Millisecond)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		m.run(ctx, tick)
	}()
	// Kafka's "kafka-log-retention" and "PeriodicProducerExpirationCheck" tasks.
	m.every(ctx, m.cfg.RetentionCheckIntervalMs, func(now time.Time) { m.cleanupLogs(now) })
	m.every(ctx, m.cfg.ProducerIDExpirationCheckIntervalMs, func(now time.Time) { m.removeExpiredProducers(now) })
	if m.cleaner != nil {
		m.cleaner.start(ctx, &m.wg)
	}
}

// highWatermarkCheckpointInterval is Kafka's
// replica.high.watermark.checkpoint.interval.ms default.
const highWatermarkCheckpointInterval = 5 * time.Second

// msDuration converts a millisecond config to a Duration, saturating:
// Kafka's "never" defaults (Long.MAX_VALUE) overflow a Duration, and a
// wrapped negative interval would make the loop spin.
func msDuration(ms int64) time.Duration {
	if ms <= 0 {
		return 0
	}
	if ms > int64(math.MaxInt64/time.Millisecond) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(ms) * time.Millisecond
}

// every runs task every intervalMs on a goroutine the manager owns, until
// ctx ends.
func (m *Manager) every(ctx context.Context, intervalMs int64, task func(now time.Time)) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(time.Duration(intervalMs) * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case now := <-t.C:
				task(now)
			}
		}
	}()
}

func (m *Manager) run(ctx context.Context, tick time.Duration) {
	t := time.NewTicker(tick)
	defer t.Stop()
	lastRecoveryCheckpoint, lastStartCheckpoint, lastIndexSweep := time.Now(), time.Now(), time.Now()
	lastHWCheckpoint := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			for tp, l := range m.All() {
				if err := l.maybeFlushByTime(now); err != nil && !errors.Is(err, ErrClosed) {
					m.logger.Error("scheduled flush failed", "partition", tp.String(), "err", err)
				}
				l.deleteExpiredSegments(now)
			}
			if now.Sub(lastRecoveryCheckpoint) >= msDuration(m.cfg.FlushOffsetCheckpointIntervalMs) {
				lastRecoveryCheckpoint = now
				m.logError("write recovery point checkpoints", m.checkpointRecoveryPoints())
				m.logError("delete old producer snapshots", m.deleteProducerSnapshots())
			}
			if now.Sub(lastHWCheckpoint) >= highWatermarkCheckpointInterval {
				lastHWCheckpoint = now
				m.logError("write high watermark checkpoints", m.checkpointHighWatermarks())
			}
			if now.Sub(lastStartCheckpoint) >= msDuration(m.cfg.FlushStartOffsetCheckpointIntervalMs) {
				lastStartCheckpoint = now
				m.logError("write log start offset checkpoints", m.checkpointLogStartOffsets())
			}
			m.removeDoomedDirs(now)
			if now.Sub(lastIndexSweep) >= indexSweepInterval {
				lastIndexSweep = now
				m.unmapIdleIndexes(now)
			}
		}
	}
}

func (m *Manager) logError(what string, err error) {
	if err != nil {
		m.logger.Error(what+" failed", "err", err)
	}
}

// removeDoomedDirs removes the *-delete directories whose delay has passed.
func (m *Manager) removeDoomedDirs(now time.Time) {
	m.mu.Lock()
	var due []string
	kept := m.doomed[:0]
	for _, d := range m.doomed {
		if now.Before(d.deadline) {
			kept = append(kept, d)
		} else {
			due = append(due, d.path)
		}
	}
	m.doomed = kept
	m.mu.Unlock()
	for _, path := range due {
		if err := os.RemoveAll(path); err != nil {
			m.logger.Error("remove deleted log failed", "dir", path, "err", err)
			continue
		}
		m.logger.Info("removed deleted log", "dir", path)
	}
}

// checkpointRecoveryPoints writes each log.dir's recovery-point-offset-checkpoint.
func (m *Manager) checkpointRecoveryPoints() error {
	return m.writeCheckpoints(RecoveryPointCheckpointFile, func(l *Log) (int64, bool) {
		return l.RecoveryPoint(), true
	})
}

// checkpointHighWatermarks writes each log.dir's replication-offset-checkpoint.
func (m *Manager) checkpointHighWatermarks() error {
	return m.writeCheckpoints(HighWatermarkCheckpointFile, func(l *Log) (int64, bool) {
		return l.HighWatermark(), true
	})
}

// checkpointLogStartOffsets writes each log.dir's log-start-offset-checkpoint,
// listing only logs whose start is past their first segment, as Kafka does.
func (m *Manager) checkpointLogStartOffsets() error {
	return m.writeCheckpoints(LogStartOffsetCheckpointFile, func(l *Log) (int64, bool) {
		start := l.LogStartOffset()
		return start, start > l.firstSegmentBase()
	})
}

func (m *Manager) writeCheckpoints(file string, offset func(*Log) (int64, bool)) error {
	m.checkpointMu.Lock()
	defer m.checkpointMu.Unlock()
	m.mu.Lock()
	perDir := make(map[*logDir]map[TopicPartition]int64, len(m.dirs))
	for _, d := range m.dirs {
		if d.offline() == nil {
			perDir[d] = map[TopicPartition]int64{}
		}
	}
	for tp, ml := range m.logs {
		if off, ok := offset(ml.log); ok && perDir[ml.dir] != nil {
			perDir[ml.dir][tp] = off
		}
	}
	m.mu.Unlock()
	var errs []error
	for d, offsets := range perDir {
		if err := writeCheckpoint(filepath.Join(d.path, file), offsets); err != nil {
			if isIOError(err) {
				d.health.fail(err) // Kafka: a checkpoint that cannot be written takes the dir offline
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// GetOrCreate returns the partition's log, creating it in the log.dir with
// the fewest partitions if it does not exist; zero fields of cfg take the
// broker defaults. A non-zero topicID is written to partition.metadata, and
// must match the id already there.
func (m *Manager) GetOrCreate(tp TopicPartition, topicID [16]byte, cfg Config) (*Log, error) {
	cfg = cfg.withDefaultsFrom(m.cfg.Default)
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waitCreatingLocked(tp)
	if m.closed {
		return nil, fmt.Errorf("get or create %s: %w", tp, ErrClosed)
	}
	hasID := topicID != [16]byte{}
	if ml, ok := m.logs[tp]; ok {
		if hasID && ml.hasID && ml.topicID != topicID {
			return nil, fmt.Errorf("%s: %w: log has %s, asked for %s", tp, ErrInconsistentTopicID,
				formatTopicID(ml.topicID), formatTopicID(topicID))
		}
		if hasID && !ml.hasID {
			if err := writePartitionMetadata(ml.log.Dir(), topicID); err != nil {
				return nil, fmt.Errorf("get or create %s: %w", tp, err)
			}
			ml.topicID, ml.hasID = topicID, true
		}
		if !ml.claimed {
			// A log loaded at start had the broker defaults until now.
			ml.log.UpdateConfig(cfg)
			ml.claimed = true
		}
		return ml.log, nil
	}
	if dir, ok := m.offlinePartitions[tp]; ok {
		// Its data is in a log.dir that failed to load: an empty log
		// elsewhere would hide it (Kafka refuses likewise).
		return nil, fmt.Errorf("create %s: %w: its log is in offline dir %s", tp, ErrKafkaStorage, dir)
	}
	d := m.nextDirLocked()
	if d == nil {
		return nil, fmt.Errorf("create %s: %w: no usable log dir", tp, ErrKafkaStorage)
	}
	// The files are made and fsynced without mu, so the partitions of a
	// large delta are created side by side rather than one fsync after
	// another; the reservation keeps others off this partition meanwhile.
	c := &creation{dir: d, done: make(chan struct{})}
	m.creating[tp] = c
	m.creations.Add(1)
	m.mu.Unlock()
	ml, err := m.createLog(tp, d, topicID, cfg)
	m.mu.Lock()
	delete(m.creating, tp)
	close(c.done)
	m.creations.Done()
	if err != nil {
		return nil, err
	}
	if m.closed {
		ml.log.Close()
		return nil, fmt.Errorf("create %s: %w", tp, ErrClosed)
	}
	m.logs[tp] = ml
	m.logger.Info("created log", "partition", tp.String(), "dir", ml.log.Dir())
	return ml.log, nil
}

// creation is a log GetOrCreate is creating: its log.dir, and done, closed
// when it is created or failed.
type creation struct {
	dir  *logDir
	done chan struct{}
}

// waitCreatingLocked waits, releasing mu meanwhile, until no log of tp is
// being created.
func (m *Manager) waitCreatingLocked(tp TopicPartition) {
	for c := m.creating[tp]; c != nil; c = m.creating[tp] {
		m.mu.Unlock()
		<-c.done
		m.mu.Lock()
	}
}

// createLog makes a new partition log in d: its directory, its
// partition.metadata when the topic id is known, and the log.dir's entry
// fsynced. It runs without mu.
func (m *Manager) createLog(tp TopicPartition, d *logDir, topicID [16]byte, cfg Config) (*managedLog, error) {
	path := filepath.Join(d.path, tp.String())
	l, err := openLog(path, cfg, 0, 0, m.logger.With("partition", tp.String()), m.files, shutdownUnknown)
	if err != nil {
		if isIOError(err) {
			d.health.fail(err)
		}
		return nil, fmt.Errorf("create %s: %w", tp, err)
	}
	l.decompression = m.decompression
	l.health = d.health
	ml := &managedLog{log: l, dir: d, claimed: true}
	if topicID != [16]byte{} {
		if err := writePartitionMetadata(path, topicID); err != nil {
			l.Close()
			return nil, fmt.Errorf("create %s: %w", tp, err)
		}
		ml.topicID, ml.hasID = topicID, true
	}
	if err := syncDir(d.path); err != nil {
		l.Close()
		return nil, fmt.Errorf("create %s: %w", tp, err)
	}
	return ml, nil
}

// nextDirLocked picks the usable log.dir holding the fewest partitions
// (Kafka's LogManager.nextLogDirs).
func (m *Manager) nextDirLocked() *logDir {
	online := 0
	for _, d := range m.dirs {
		if d.offline() == nil {
			online++
		}
	}
	// Counting is O(partitions) per create; with one choice it is not needed.
	counts := map[*logDir]int{}
	if online > 1 {
		for _, ml := range m.logs {
			counts[ml.dir]++
		}
		for _, c := range m.creating {
			counts[c.dir]++
		}
	}
	var best *logDir
	for _, d := range m.dirs {
		if d.offline() != nil {
			continue
		}
		if best == nil || counts[d] < counts[best] {
			best = d
		}
	}
	return best
}

// OpenSegmentFiles is how many segment files are open now, under the
// gregor.log.max.open.files budget.
func (m *Manager) OpenSegmentFiles() int { return m.files.openFiles() }

// Get returns the partition's log if it is hosted here.
func (m *Manager) Get(tp TopicPartition) (*Log, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.logs[tp]
	if !ok {
		return nil, false
	}
	return ml.log, true
}

// TopicID returns the topic id from the partition's partition.metadata.
func (m *Manager) TopicID(tp TopicPartition) ([16]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ml, ok := m.logs[tp]
	if !ok || !ml.hasID {
		return [16]byte{}, false
	}
	return ml.topicID, true
}

// All returns every hosted log.
func (m *Manager) All() map[TopicPartition]*Log {
	m.mu.Lock()
	defer m.mu.Unlock()
	all := make(map[TopicPartition]*Log, len(m.logs))
	for tp, ml := range m.logs {
		all[tp] = ml.log
	}
	return all
}

// Delete closes the partition's log and renames its directory to
// "<topic>-<partition>.<uuid>-delete" (Kafka's naming); the background task
// removes it after the file delete delay.
func (m *Manager) Delete(tp TopicPartition) error {
	m.cleaner.abort(tp) // before mu: the cleaner takes its lock, then mu
	m.mu.Lock()
	defer m.mu.Unlock()
	m.waitCreatingLocked(tp)
	ml, ok := m.logs[tp]
	if !ok {
		return nil
	}
	delete(m.logs, tp)
	if err := ml.log.Close(); err != nil {
		m.logger.Warn("close deleted log", "partition", tp.String(), "err", err)
	}
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		return fmt.Errorf("delete %s: %w", tp, err)
	}
	doomed := filepath.Join(ml.dir.path, deleteDirName(tp, id))
	if err := os.Rename(ml.log.Dir(), doomed); err != nil {
		return fmt.Errorf("delete %s: %w", tp, err)
	}
	if err := syncDir(ml.dir.path); err != nil {
		return fmt.Errorf("delete %s: %w", tp, err)
	}
	m.doomed = append(m.doomed, doomedDir{path: doomed, deadline: time.Now().Add(m.fileDeleteDelay())})
	m.logger.Info("scheduled log for deletion", "partition", tp.String(), "dir", doomed)
	return nil
}

// maxFileNameBytes is the longest file name Linux file systems take
// (NAME_MAX); a longer one fails with ENAMETOOLONG.
const maxFileNameBytes = 255

// deleteDirName is the name a deleted partition's directory is renamed to:
// "<topic>-<partition>.<id>-delete", the topic shortened so the name fits
// maxFileNameBytes (Kafka's logDeleteDirName). A topic name may be 249
// characters, which with the suffix would pass the limit, and the rename
// would fail: the topic's directory could never be deleted. Only the suffix
// matters afterwards; start-up removes every "*-delete" directory.
func deleteDirName(tp TopicPartition, id [16]byte) string {
	suffix := "-" + strconv.Itoa(int(tp.Partition)) + "." + hex.EncodeToString(id[:]) + deleteDirSuffix
	topic := tp.Topic
	if len(topic) > maxFileNameBytes-len(suffix) {
		topic = topic[:maxFileNameBytes-len(suffix)] // topic names are ASCII
	}
	return topic + suffix
}

// OfflineError is nil while every log.dir is online; otherwise it names
// the offline ones and why (for /readyz).
func (m *Manager) OfflineError() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, d := range m.dirs {
		if err := d.offline(); err != nil {
			errs = append(errs, fmt.Errorf("log dir %s offline: %w", d.path, err))
		}
	}
	return errors.Join(errs...)
}

// DescribeDirs reports each log.dir's space and partitions (DescribeLogDirs).
func (m *Manager) DescribeDirs() []DirDescription {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]DirDescription, 0, len(m.dirs))
	for _, d := range m.dirs {
		desc := DirDescription{Path: d.path, Err: d.offline()}
		if desc.Err != nil {
			// Kafka describes an offline dir by its error alone.
			out = append(out, desc)
			continue
		}
		if desc.Err == nil {
			var st unix.Statfs_t
			if err := unix.Statfs(d.path, &st); err != nil {
				desc.Err = fmt.Errorf("statfs %s: %w", d.path, err)
			} else {
				desc.TotalBytes = int64(st.Blocks) * int64(st.Bsize)
				desc.UsableBytes = int64(st.Bavail) * int64(st.Bsize)
			}
		}
		for tp, ml := range m.logs {
			if ml.dir == d {
				desc.Partitions = append(desc.Partitions, PartitionSize{TP: tp, Size: ml.log.Size()})
			}
		}
		slices.SortFunc(desc.Partitions, func(a, b PartitionSize) int {
			return cmp.Or(strings.Compare(a.TP.Topic, b.TP.Topic), cmp.Compare(a.TP.Partition, b.TP.Partition))
		})
		out = append(out, desc)
	}
	return out
}

// Close stops the background work, flushes and closes every log, writes both
// checkpoints, and marks each log.dir whose logs all closed cleanly with the
// clean-shutdown marker.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	cancel := m.cancel
	m.mu.Unlock()
	if cancel != nil {
		cancel()
	}
	m.wg.Wait()
	m.creations.Wait() // each closes its log when it sees closed

	dirErrs := m.closeLogs()
	// The logs closed without an fsync each; one syncfs per directory makes
	// all of it durable before the recovery points and the clean-shutdown
	// marker say so. A failure takes the directory offline, so neither is
	// written for it and the next start recovers it.
	for _, d := range m.dirs {
		if d.offline() != nil {
			continue
		}
		if err := m.syncFS(d.path); err != nil {
			d.health.fail(err)
			dirErrs[d] = errors.Join(dirErrs[d], fmt.Errorf("%w: %w", ErrKafkaStorage, err))
		}
	}
	errs := []error{m.checkpointRecoveryPoints(), m.checkpointLogStartOffsets(), m.checkpointHighWatermarks()}
	for _, d := range m.dirs {
		if d.offline() != nil || dirErrs[d] != nil {
			errs = append(errs, dirErrs[d])
			continue
		}
		// Kafka 3.7+'s JSON document: its presence says the logs were
		// closed cleanly, its broker epoch that this broker incarnation
		// shut down cleanly (KIP-966).
		marker := filepath.Join(d.path, CleanShutdownFileName)
		content := fmt.Sprintf(`{"version":0,"brokerEpoch":%d}`, m.brokerEpoch.Load())
		if err := writeFileAtomic(marker, []byte(content)); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close log manager: %w", err)
	}
	return nil
}

// closeLogs closes every log, without fsyncs (Close syncs each directory's
// file system after), and reports errors per log.dir.
// Each log.dir closes its logs on num.recovery.threads.per.data.dir
// goroutines, as Kafka's LogManager.shutdown does: closing is system calls
// (a producer snapshot created per written log, index trims), which
// overlap.
func (m *Manager) closeLogs() map[*logDir]error {
	m.mu.Lock()
	defer m.mu.Unlock()
	perDir := map[*logDir][]TopicPartition{}
	for tp, ml := range m.logs {
		perDir[ml.dir] = append(perDir[ml.dir], tp)
	}
	var mu sync.Mutex
	errs := map[*logDir]error{}
	var wg sync.WaitGroup
	for d, tps := range perDir {
		var next atomic.Int64
		for range min(m.cfg.RecoveryThreadsPerDataDir, len(tps)) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := next.Add(1) - 1; i < int64(len(tps)); i = next.Add(1) - 1 {
					tp := tps[i]
					if err := m.logs[tp].log.closeUnsynced(); err != nil {
						mu.Lock()
						errs[d] = errors.Join(errs[d], fmt.Errorf("close %s: %w", tp, err))
						mu.Unlock()
					}
				}
			}()
		}
	}
	wg.Wait()
	return errs
}

// SetBrokerEpoch is the broker epoch of this incarnation's registration,
// which a clean Close writes into each log.dir's clean-shutdown marker.
func (m *Manager) SetBrokerEpoch(epoch int64) { m.brokerEpoch.Store(epoch) }

// PreviousBrokerEpoch is the broker epoch the previous incarnation wrote at
// its clean shutdown, -1 if it did not shut down cleanly (Kafka's
// LogManager.readBrokerEpochFromCleanShutdownFiles): the registration
// tells the controller, which keeps the broker's eligible leader replicas
// only after a clean shutdown.
func (m *Manager) PreviousBrokerEpoch() int64 { return m.previousBrokerEpoch }

// previousBrokerEpoch reads the clean-shutdown markers of dirs: their
// common broker epoch, or -1 when a marker is missing, unreadable or they
// differ.
func previousBrokerEpoch(dirs []string) int64 {
	epoch := int64(-1)
	for i, dir := range dirs {
		b, err := os.ReadFile(filepath.Join(dir, CleanShutdownFileName))
		if err != nil {
			return -1
		}
		var content struct {
			BrokerEpoch *int64 `json:"brokerEpoch"`
		}
		if json.Unmarshal(b, &content) != nil || content.BrokerEpoch == nil {
			return -1
		}
		if i > 0 && *content.BrokerEpoch != epoch {
			return -1
		}
		epoch = *content.BrokerEpoch
	}
	return epoch
}

// syncFileSystem commits everything written to the file system holding dir
// (syncfs(2)): the logs' data, indexes, snapshots, checkpoints and the
// directory entries made for them.
func syncFileSystem(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return fmt.Errorf("syncfs %s: %w", dir, err)
	}
	return nil
}
