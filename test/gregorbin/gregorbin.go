// Package gregorbin builds the gregor binary once for a test binary's
// suites (test/ and test/chaos start it as real processes).
package gregorbin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// Build compiles gregor/cmd/gregor into a temporary directory and returns
// the binary's path and a function that removes it.
func Build() (string, func(), error) {
	dir, err := os.MkdirTemp("", "gregor-bin")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "gregor")
	build := exec.Command("go", "build", "-o", bin, "gregor/cmd/gregor")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("build gregor: %w", err)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// Main is a TestMain body: build gregor into *bin, run the tests, clean up.
// GREGOR_BENCH_BIN names a prebuilt binary to use instead (to measure
// another commit's binary with this commit's suites and benchmarks).
func Main(run func() int, bin *string) int {
	if prebuilt := os.Getenv("GREGOR_BENCH_BIN"); prebuilt != "" {
		if _, err := os.Stat(prebuilt); err != nil {
			fmt.Fprintln(os.Stderr, "GREGOR_BENCH_BIN:", err)
			return 1
		}
		*bin = prebuilt
		return run()
	}
	path, cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	*bin = path
	defer cleanup()
	return run()
}
