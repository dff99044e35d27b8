// Package cli holds Gregor's operator commands (topic, produce, consume,
// group, config, user, cluster, log, bench). They talk to any Kafka cluster
// through franz-go's kgo and kadm clients (log dump reads segment files), and
// their flags follow Kafka's own tools (kafka-topics, kafka-console-producer/
// consumer, kafka-consumer-groups, kafka-configs, kafka-dump-log, the perf
// tests) so that a Kafka operator's habits carry over.
//
// Each command writes its results to the cobra command's output writer and
// returns one-line errors; the binary prints them and exits non-zero.
package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// BootstrapEnv names the environment variable that gives the default for
// --bootstrap-server.
const BootstrapEnv = "GREGOR_BOOTSTRAP"

// defaultBootstrap is where `gregor server` listens with no flags.
const defaultBootstrap = "127.0.0.1:9092"

// Commands returns the operator commands, ready to add to the root command.
func Commands() []*cobra.Command {
	return []*cobra.Command{
		NewTopicCommand(),
		NewProduceCommand(),
		NewConsumeCommand(),
		NewGroupCommand(),
		NewConfigCommand(),
		NewUserCommand(),
		NewClusterCommand(),
		NewTransactionsCommand(),
		NewLogCommand(),
		NewBenchCommand(),
	}
}

// connFlags are the flags every command shares: where the cluster is and how
// long to wait for it.
type connFlags struct {
	bootstrap string
	timeout   time.Duration
}

func (c *connFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&c.bootstrap, "bootstrap-server", "",
		"broker(s) to connect to, host:port[,host:port...] (default $"+BootstrapEnv+", else "+defaultBootstrap+")")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second,
		"give up when the cluster does not answer within this long")
}

func (c *connFlags) seeds() []string {
	b := c.bootstrap
	if b == "" {
		b = os.Getenv(BootstrapEnv)
	}
	if b == "" {
		b = defaultBootstrap
	}
	var out []string
	for _, s := range strings.Split(b, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// dialRecorder remembers the last failed dial, so that "cannot reach" errors
// say why (connection refused, no such host) instead of only "deadline".
type dialRecorder struct {
	mu  sync.Mutex
	err error
}

func (d *dialRecorder) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err != nil {
		d.mu.Lock()
		d.err = err
		d.mu.Unlock()
	}
}

func (d *dialRecorder) last() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.err
}

// client connects to the cluster and checks within the timeout that a broker
// answers, so that an unreachable cluster is one clear error instead of a
// command that hangs.
func (c *connFlags) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	if c.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", c.timeout)
	}
	seeds := c.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-server is empty")
	}
	dials := &dialRecorder{}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.WithHooks(dials),
		kgo.DialTimeout(c.timeout),
		kgo.ClientID("gregor-cli"),
	}
	cl, err := kgo.NewClient(append(base, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := cl.Ping(pctx); err != nil {
		cl.Close()
		if d := dials.last(); d != nil {
			err = d
		}
		return nil, fmt.Errorf("cannot reach a broker at %s within %s: %w", strings.Join(seeds, ","), c.timeout, err)
	}
	return cl, nil
}

// admin returns an admin client whose requests time out with --timeout.
func (c *connFlags) admin(ctx context.Context) (*kadm.Client, error) {
	cl, err := c.client(ctx)
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(c.timeout.Milliseconds(), 1<<31-1)))
	return adm, nil
}

// deadline bounds one admin command by --timeout.
func (c *connFlags) deadline(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, c.timeout)
}

// topicArgs takes topic names from the positional arguments and the
// repeatable --topic flag (Kafka's tools use --topic).
func topicArgs(args, flagTopics []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, t := range append(append([]string{}, args...), flagTopics...) {
		if t != "" && !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// oneTopic demands exactly one topic from args or --topic.
func oneTopic(args, flagTopics []string) (string, error) {
	ts := topicArgs(args, flagTopics)
	switch len(ts) {
	case 0:
		return "", errors.New("no topic given (as an argument or with --topic)")
	case 1:
		return ts[0], nil
	default:
		return "", fmt.Errorf("one topic expected, got %d: %s", len(ts), strings.Join(ts, ", "))
	}
}

// topicErr turns Kafka's unknown-topic code (or no answer for the topic) into the message operators
// expect, and keeps other errors as they are.
func topicErr(topic string, err error) error {
	if err == nil || errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID) {
		return fmt.Errorf("topic %q does not exist", topic)
	}
	return fmt.Errorf("topic %q: %w", topic, err)
}

// parseKeyValues parses repeatable k=v flags (--config, --add-config). Each
// flag value may also hold several pairs separated by commas, as
// kafka-configs takes them; a value with commas is written in brackets
// (k=[a,b]), which become plain commas.
func parseKeyValues(flag string, items []string) (map[string]string, []string, error) {
	out := map[string]string{}
	var order []string
	for _, item := range items {
		for _, pair := range splitOutsideBrackets(item) {
			k, v, ok := strings.Cut(pair, "=")
			k = strings.TrimSpace(k)
			if !ok || k == "" {
				return nil, nil, fmt.Errorf("--%s %q: want key=value", flag, pair)
			}
			if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
				v = v[1 : len(v)-1]
			}
			if _, dup := out[k]; !dup {
				order = append(order, k)
			}
			out[k] = v
		}
	}
	return out, order, nil
}

func splitOutsideBrackets(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '[':
			depth++
		case ']':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				parts = append(parts, s[start:i])
				start = i + 1
			}
		}
	}
	parts = append(parts, s[start:])
	var out []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			out = append(out, p)
		}
	}
	return out
}

func joinInt32(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}

// withAdmin runs fn with an admin client that answers within --timeout,
// and closes the client afterwards.
func (c *connFlags) withAdmin(cmd *cobra.Command, fn func(ctx context.Context, adm *kadm.Client) error) error {
	ctx, cancel := c.deadline(cmd)
	defer cancel()
	adm, err := c.admin(ctx)
	if err != nil {
		return err
	}
	defer adm.Close()
	return fn(ctx, adm)
}
