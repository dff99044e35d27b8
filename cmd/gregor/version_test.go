package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestDescribeBuild(t *testing.T) {
	for _, tc := range []struct {
		info debug.BuildInfo
		want string
	}{
		{
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
				{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "1f9338f3"},
				{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"}, {Key: "vcs.modified", Value: "true"},
			}},
			"(devel), revision 1f9338f3 (2026-12-01T10:00:00Z) with uncommitted changes, go1.26.0",
		},
		{
			debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
				{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"},
			}},
			"v0.3.0, revision abc, go1.26.0",
		},
		{debug.BuildInfo{Main: debug.Module{}}, "(devel)"},
	} {
		if got := describeBuild(&tc.info); got != tc.want {
			t.Errorf("describeBuild = %q, want %q", got, tc.want)
		}
	}
}

// TestVersionFlag runs `gregor --version` on the real root command.
func TestVersionFlag(t *testing.T) {
	root := newRootCommand()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"--version"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); !strings.HasPrefix(got, "gregor version ") || !strings.Contains(got, version()) {
		t.Fatalf("--version printed %q", got)
	}
}
