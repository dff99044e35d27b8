package config

import (
	"strings"
	"testing"
	"time"
)

func TestGroupShareDefaultsAndChecks(t *testing.T) {
	b, _ := mustLoad(t, map[string]string{})
	want := GroupShare{SessionTimeoutMs: 45000, MinSessionTimeoutMs: 45000, MaxSessionTimeoutMs: 60000,
		HeartbeatIntervalMs: 5000, MinHeartbeatIntervalMs: 5000, MaxHeartbeatIntervalMs: 15000, MaxSize: 200,
		RecordLockDurationMs: 30000, MinRecordLockDurationMs: 15000, MaxRecordLockDurationMs: 60000,
		DeliveryCountLimit: 5, PartitionMaxRecordLocks: 2000}
	if b.GroupShare != want {
		t.Fatalf("GroupShare = %+v", b.GroupShare)
	}
	for _, tc := range []struct {
		props map[string]string
		want  string
	}{
		{map[string]string{"group.share.heartbeat.interval.ms": "4000"}, "group.share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms"},
		{map[string]string{"group.share.session.timeout.ms": "70000"}, "group.share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms"},
		{map[string]string{"group.share.record.lock.duration.ms": "70000"}, "group.share.max.record.lock.duration.ms must be greater than or equal to group.share.record.lock.duration.ms"},
		{map[string]string{"group.share.max.size": "1001"}, "group.share.max.size"},
		{map[string]string{"group.share.delivery.count.limit": "1"}, "group.share.delivery.count.limit"},
	} {
		if _, _, err := Load(tc.props); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Load(%v) = %v, want %q", tc.props, err, tc.want)
		}
	}
}

func TestValidateGroupConfig(t *testing.T) {
	b, _ := mustLoad(t, map[string]string{})
	for _, tc := range []struct {
		all  map[string]string
		want string // "" valid
	}{
		{map[string]string{"share.session.timeout.ms": "50000", "share.auto.offset.reset": "earliest", "share.isolation.level": "read_committed"}, ""},
		{map[string]string{"share.auto.offset.reset": "by_duration:P1DT2H3M4.5S"}, ""},
		{map[string]string{"consumer.session.timeout.ms": "50000", "consumer.heartbeat.interval.ms": "6000"}, ""},
		{map[string]string{"share.session.timeout.ms": "1000"}, "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms"},
		{map[string]string{"share.heartbeat.interval.ms": "16000"}, "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms"},
		{map[string]string{"share.record.lock.duration.ms": "10000"}, "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms"},
		{map[string]string{"share.session.timeout.ms": "x"}, "Invalid value x for configuration share.session.timeout.ms: Not a number of type INT"},
		{map[string]string{"share.auto.offset.reset": "none"}, "Invalid value none for configuration share.auto.offset.reset"},
		{map[string]string{"share.auto.offset.reset": "by_duration:-PT1S"}, "Negative duration is not supported."},
		{map[string]string{"share.isolation.level": "dirty"}, "Invalid value dirty for configuration share.isolation.level"},
		{map[string]string{"share.delivery.count.limit": "3"}, "Unknown group config name: share.delivery.count.limit"},
	} {
		err := b.ValidateGroupConfig(tc.all)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: %v", tc.all, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: %v, want %q", tc.all, err, tc.want)
		}
	}
	sg := b.ShareGroup(map[string]string{"share.heartbeat.interval.ms": "6000", "share.auto.offset.reset": "BY_DURATION:PT90S", "share.isolation.level": "read_committed"})
	if sg.HeartbeatIntervalMs != 6000 || sg.SessionTimeoutMs != 45000 || sg.AutoOffsetResetDuration != 90*time.Second ||
		!sg.ReadCommitted || sg.DeliveryCountLimit != 5 || sg.RecordLockDurationMs != 30000 {
		t.Fatalf("ShareGroup = %+v", sg)
	}
}
