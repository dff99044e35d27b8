package main

import (
	"runtime/debug"
	"strings"
)

// version describes this binary for `gregor --version`: the module version
// ("(devel)" for a build from a work tree), the VCS revision, its commit
// time and whether the tree had uncommitted changes, and the Go version,
// as the Go toolchain stamped them into the build.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (built without module support)"
	}
	return describeBuild(info)
}

func describeBuild(info *debug.BuildInfo) string {
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var revision, commitTime string
	modified := false
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.time":
			commitTime = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	parts := []string{v}
	if revision != "" {
		r := "revision " + revision
		if commitTime != "" {
			r += " (" + commitTime + ")"
		}
		if modified {
			r += " with uncommitted changes"
		}
		parts = append(parts, r)
	}
	if info.GoVersion != "" {
		parts = append(parts, info.GoVersion)
	}
	return strings.Join(parts, ", ")
}
