package cli

import (
	"regexp"
	"strings"
	"testing"
)

// TestFeatureCommands runs `feature` as kafka-features.sh is run: describe,
// a failed and a dry-run update, disabling and re-enabling share groups, a
// metadata.version downgrade Kafka refuses and one it allows, and
// version-mapping.
func TestFeatureCommands(t *testing.T) {
	c := startCluster(t, nil)

	epoch := regexp.MustCompile(`Epoch: \d+`)
	describe := func() string {
		t.Helper()
		return epoch.ReplaceAllString(c.ok("feature", "describe"), "Epoch: N")
	}
	want := "Feature: eligible.leader.replicas.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: N\n" +
		"Feature: group.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: N\n" +
		"Feature: metadata.version\tSupportedMinVersion: 3.3-IV3\tSupportedMaxVersion: 4.0-IV3\tFinalizedVersionLevel: 4.0-IV3\tEpoch: N\n" +
		"Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1\tEpoch: N\n" +
		"Feature: transaction.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 2\tFinalizedVersionLevel: 2\tEpoch: N\n"
	if got := describe(); got != want {
		t.Fatalf("describe:\n%s\nwant:\n%s", got, want)
	}

	// A level no node supports: every feature of the request fails.
	r := c.run("", "feature", "upgrade", "--feature", "share.version=2", "--feature", "group.version=1")
	wantOut := "Could not upgrade group.version to 1. The update failed for all features since the following feature had an error: " +
		"Invalid update version 2 for feature share.version. Local controller 1 only supports versions 0-1\n" +
		"Could not upgrade share.version to 2. The update failed for all features since the following feature had an error: " +
		"Invalid update version 2 for feature share.version. Local controller 1 only supports versions 0-1\n"
	if r.err == nil || r.err.Error() != "2 out of 2 operation(s) failed" || r.out != wantOut {
		t.Fatalf("upgrade to an unsupported level: %v\n%s", r.err, r.out)
	}
	c.fails("1 out of 1 operation(s) failed", "feature", "upgrade", "--feature", "share.version=0")
	c.fails("1 out of 1 operation(s) failed", "feature", "upgrade", "--feature", "no.such.version=1")

	if out := c.ok("feature", "disable", "--feature", "share.version", "--dry-run"); out != "share.version can be disabled.\n" {
		t.Fatalf("dry run: %q", out)
	}
	if got := describe(); got != want {
		t.Fatalf("a dry run changed the features:\n%s", got)
	}
	if out := c.ok("feature", "downgrade", "--feature", "share.version=0"); out != "share.version was downgraded to 0.\n" {
		t.Fatalf("downgrade: %q", out)
	}
	off := strings.Replace(want, "Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 1",
		"Feature: share.version\tSupportedMinVersion: 0\tSupportedMaxVersion: 1\tFinalizedVersionLevel: 0", 1)
	if got := describe(); got != off {
		t.Fatalf("describe after the downgrade:\n%s\nwant:\n%s", got, off)
	}
	if out := c.ok("feature", "upgrade", "--feature", "share.version=1"); out != "share.version was upgraded to 1.\n" {
		t.Fatalf("upgrade: %q", out)
	}
	if got := describe(); got != want {
		t.Fatalf("describe after the upgrade:\n%s", got)
	}

	// metadata.version: 4.0-IV1 changed the metadata format, so a
	// downgrade below it is refused; to 4.0-IV1 itself it is safe.
	r = c.run("", "feature", "downgrade", "--release-version", "3.9-IV0")
	if r.err == nil || !strings.Contains(r.out, "Could not downgrade metadata.version to 21. The update failed for all features since the following feature had an error: "+
		"Invalid metadata.version 21. Refusing to perform the requested downgrade because it might delete metadata information.\n") {
		t.Fatalf("downgrade to 3.9: %v\n%s", r.err, r.out)
	}
	r = c.run("", "feature", "downgrade", "--feature", "metadata.version=21", "--unsafe")
	if r.err == nil || !strings.Contains(r.out, "Unsafe metadata downgrade is not supported in this version.") {
		t.Fatalf("unsafe downgrade: %v\n%s", r.err, r.out)
	}
	if out := c.ok("feature", "downgrade", "--feature", "metadata.version=23"); out != "metadata.version was downgraded to 23.\n" {
		t.Fatalf("downgrade to 4.0-IV1: %q", out)
	}
	if out := c.ok("feature", "upgrade", "--release-version", "4.0"); out != "eligible.leader.replicas.version was upgraded to 1.\ngroup.version was upgraded to 1.\nmetadata.version was upgraded to 25.\nshare.version was upgraded to 1.\ntransaction.version was upgraded to 2.\n" {
		t.Fatalf("upgrade --release-version 4.0: %q", out)
	}
	if got := describe(); got != want {
		t.Fatalf("describe at the end:\n%s", got)
	}

	// Bad input: one-line errors before anything is sent.
	for _, f := range []struct {
		want string
		args []string
	}{
		{"you must specify at least one feature to upgrade", []string{"upgrade"}},
		{"can't parse feature=level string share.version: equals sign not found", []string{"upgrade", "--feature", "share.version"}},
		{"can't parse feature=level string share.version=x: unable to parse x as a short", []string{"upgrade", "--feature", "share.version=x"}},
		{"feature share.version was specified more than once", []string{"downgrade", "--feature", "share.version=0", "--feature", "share.version=0"}},
		{"can not specify --release-version with --feature", []string{"upgrade", "--release-version", "4.0", "--feature", "share.version=1"}},
		{"unknown metadata.version 9.9; supported metadata.version are 3.3-IV3 to 4.0-IV3", []string{"upgrade", "--release-version", "9.9"}},
		{"unknown release version '2.8'; supported versions are 3.3-IV3 to 4.0-IV3", []string{"version-mapping", "--release-version", "2.8"}},
	} {
		c.fails(f.want, append([]string{"feature"}, f.args...)...)
	}
}

func TestFeatureVersionMapping(t *testing.T) {
	for _, tc := range []struct{ args, want string }{
		{"", "metadata.version=25 (4.0-IV3)\neligible.leader.replicas.version=1\ngroup.version=1\nshare.version=1\ntransaction.version=2\n"},
		{"--release-version 4.0-IV0", "metadata.version=22 (4.0-IV0)\neligible.leader.replicas.version=0\ngroup.version=1\nshare.version=0\ntransaction.version=0\n"},
		{"--release-version 3.9", "metadata.version=21 (3.9-IV0)\neligible.leader.replicas.version=0\ngroup.version=0\nshare.version=0\ntransaction.version=0\n"},
	} {
		args := append([]string{"feature", "version-mapping"}, strings.Fields(tc.args)...)
		r := runCommand(t, "", args...)
		if r.err != nil || r.out != tc.want {
			t.Errorf("%v: %v\n%s\nwant:\n%s", args, r.err, r.out, tc.want)
		}
	}
}
