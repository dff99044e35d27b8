package cli

import "testing"

// TestFlagHints: Kafka's tools take the action as a flag; given to the
// gregor command that has that action as a subcommand, the error names it.
func TestFlagHints(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"topic", "--list"}, "unknown flag: --list (did you mean `gregor topic list`?)"},
		{[]string{"topic", "--bootstrap-server", "127.0.0.1:1", "--create", "--topic", "t"}, "unknown flag: --create (did you mean `gregor topic create`?)"},
		{[]string{"group", "--describe", "--group", "g"}, "unknown flag: --describe (did you mean `gregor group describe`?)"},
		{[]string{"config", "--describe", "--topic", "t"}, "unknown flag: --describe (did you mean `gregor config get`?)"},
		{[]string{"acl", "--add"}, "unknown flag: --add (did you mean `gregor acl add`?)"},
		{[]string{"topic", "--bogus"}, "unknown flag: --bogus"},        // no such subcommand: the plain error
		{[]string{"topic", "list", "--list"}, "unknown flag: --list"},  // a leaf command: nothing to suggest
		{[]string{"topic", "-x"}, "unknown shorthand flag: 'x' in -x"}, // shorthands are left alone
	} {
		r := runCommand(t, "", tc.args...)
		if r.err == nil || r.err.Error() != tc.want {
			t.Errorf("gregor %v: error %v, want %q", tc.args, r.err, tc.want)
		}
	}
	// kafka-configs' --describe is also a name of `config get`.
	r := runCommand(t, "", "config", "describe", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1s")
	if r.err == nil || r.err.Error() != "--entity-type topics|brokers is required (or --topic / --broker)" {
		t.Errorf("config describe: %v", r.err)
	}
}
