// Package cli holds Gregor's operator commands (topic, produce, consume,
// group, share-group, share-consume, config, user, acl, quota, cluster, feature, reassign,
// leader, transactions, log, bench). They talk to any Kafka cluster through
// franz-go's kgo and kadm clients (log dump reads segment files), and their
// flags follow Kafka's own tools (kafka-topics, kafka-console-producer/
// consumer, kafka-console-share-consumer, kafka-consumer-groups, kafka-share-groups, kafka-configs,
// kafka-acls, kafka-cluster, kafka-features, kafka-reassign-partitions,
// kafka-leader-election, kafka-dump-log, the perf tests) so that a Kafka
// operator's habits carry over.
//
// Each command writes its results to the cobra command's output writer and
// returns one-line errors; the binary prints them and exits non-zero.
package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
		NewShareGroupCommand(),
		NewShareConsumeCommand(),
		NewConfigCommand(),
		NewUserCommand(),
		NewACLCommand(),
		NewQuotaCommand(),
		NewClusterCommand(),
		NewFeatureCommand(),
		NewReassignCommand(),
		NewLeaderCommand(),
		NewTransactionsCommand(),
		NewLogCommand(),
		NewBenchCommand(),
	}
}

// connFlags are the flags every command shares: where the cluster is, how
// to authenticate to it, and how long to wait for it.
type connFlags struct {
	bootstrap     string
	timeout       time.Duration
	commandConfig string

	cmd      *cobra.Command  // where warnings go (its stderr)
	clients  clientConfigs   // the client configs a producing or consuming command takes
	security *securityConfig // read once, with settings
	settings *clientSettings
}

// clientConfigs are what a command adds to --command-config: the kind of
// client it runs, the key=value items of its property flag
// (--producer-property, --consumer-property), and its flags that stand for
// a client config.
type clientConfigs struct {
	role     clientRole
	propFlag string
	props    []string
	flagKeys []flagKey
}

// flagKey ties a client config to the flags that set it (a flag and its
// Kafka-named alias, which share one value).
type flagKey struct {
	key   string
	flags []string
}

// register adds the flags to fs, a flag set of cmd.
func (c *connFlags) register(cmd *cobra.Command, fs *pflag.FlagSet) {
	c.cmd = cmd
	fs.StringVar(&c.bootstrap, "bootstrap-server", "",
		"broker(s) to connect to, host:port[,host:port...] (default bootstrap.servers of --command-config, else $"+BootstrapEnv+", else "+defaultBootstrap+")")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second,
		"give up when the cluster does not answer within this long")
	fs.StringVar(&c.commandConfig, "command-config", "",
		"a Kafka client properties file: security.protocol, sasl.*, ssl.*, and the client's configs (acks, group.id, ...) as Kafka's tools take it")
}

// registerClientConfigs gives a producing or consuming command its property
// flag (--producer-property or --consumer-property, repeatable key=value)
// and names its flags that stand for client configs. It follows register.
func (c *connFlags) registerClientConfigs(fs *pflag.FlagSet, role clientRole, propFlag, usage string, flagKeys ...flagKey) {
	c.clients = clientConfigs{role: role, propFlag: propFlag, flagKeys: flagKeys}
	fs.StringArrayVar(&c.clients.props, propFlag, nil, usage)
}

// loadConfigs reads the client configs once (a command may make several
// clients), printing their warnings on the command's stderr. As Kafka's
// tools merge them: the --command-config file, then the property flag's
// items over it, then each flag that stands for a client config, if it was
// given or its config was not (so --acks beats acks=1 in the file, and
// acks=1 in the file beats --acks's default).
func (c *connFlags) loadConfigs() error {
	if c.security != nil {
		return nil
	}
	props := map[string]string{}
	sources := map[string]configSource{}
	var labels []string // where the security settings may come from
	if c.commandConfig != "" {
		fileProps, err := readCommandConfigFile(c.commandConfig)
		if err != nil {
			return err
		}
		for k, v := range fileProps {
			props[k], sources[k] = v, fileSource(c.commandConfig)
		}
		labels = append(labels, fileSource(c.commandConfig).label())
	}
	for _, item := range c.clients.props {
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return fmt.Errorf("--%s %q: want key=value", c.clients.propFlag, item)
		}
		props[k], sources[k] = v, propertySource(c.clients.propFlag)
	}
	if len(c.clients.props) > 0 {
		labels = append(labels, propertySource(c.clients.propFlag).label())
	}
	for _, fk := range c.clients.flagKeys {
		var given *pflag.Flag
		for _, name := range fk.flags {
			if f := c.cmd.Flags().Lookup(name); f != nil && f.Changed {
				given = f
			}
		}
		_, set := props[fk.key]
		switch first := c.cmd.Flags().Lookup(fk.flags[0]); {
		case given != nil:
			props[fk.key], sources[fk.key] = given.Value.String(), flagSource(given.Name)
		case !set && first.DefValue != "": // an empty default gives no value
			props[fk.key], sources[fk.key] = first.DefValue, flagSource(first.Name)
		}
	}
	where := strings.Join(labels, ", ")
	sc, err := parseCommandConfig(props)
	if err != nil {
		return fmt.Errorf("%s: %w", where, err)
	}
	settings, warnings, err := parseClientSettings(props, sources, c.clients.role)
	if err != nil {
		return err
	}
	if c.cmd != nil {
		for _, w := range sc.warnings {
			fmt.Fprintf(c.cmd.ErrOrStderr(), "warning: %s: %s\n", where, w)
		}
		for _, w := range warnings {
			fmt.Fprintf(c.cmd.ErrOrStderr(), "warning: %s\n", w)
		}
	}
	c.security, c.settings = &sc, &settings
	return nil
}

// clientSettings returns the client configs the command was given.
func (c *connFlags) clientSettings() (*clientSettings, error) {
	if err := c.loadConfigs(); err != nil {
		return nil, err
	}
	return c.settings, nil
}

func (c *connFlags) seeds() []string {
	b := c.bootstrap
	if b == "" && c.settings != nil && len(c.settings.bootstrap) > 0 {
		b = strings.Join(c.settings.bootstrap, ",")
	}
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
// command that hangs. The client configs the command was given apply over
// opts.
func (c *connFlags) client(ctx context.Context, opts ...kgo.Opt) (*kgo.Client, error) {
	if c.timeout <= 0 {
		return nil, fmt.Errorf("--timeout must be positive, got %s", c.timeout)
	}
	if err := c.loadConfigs(); err != nil {
		return nil, err
	}
	seeds := c.seeds()
	if len(seeds) == 0 {
		return nil, errors.New("--bootstrap-server is empty")
	}
	security, err := c.security.kgoOpts()
	if err != nil {
		return nil, err
	}
	dials := &dialRecorder{}
	base := []kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.WithHooks(dials),
		kgo.DialTimeout(c.timeout),
		kgo.ClientID("gregor-cli"),
	}
	base = append(base, security...)
	base = append(base, opts...)
	cl, err := kgo.NewClient(append(base, c.settings.opts...)...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// A broker that is still starting refuses connections: try again
	// until the timeout, as Kafka's tools wait for the cluster; a refused
	// login or TLS handshake is final.
	for backoff := 50 * time.Millisecond; ; backoff = min(2*backoff, time.Second) {
		err := cl.Ping(pctx)
		if err == nil {
			return cl, nil
		}
		// The hook saw the failed connection's error (dial, TLS handshake
		// or SASL exchange); Ping may only say the deadline passed.
		if d := dials.last(); d != nil {
			err = d
		}
		err = connectError(seeds, c.timeout, err)
		if !errors.Is(err, errUnreachable) || !sleepCtx(pctx, backoff) {
			cl.Close()
			return nil, err
		}
	}
}

// errUnreachable marks a connectError that waiting might cure.
var errUnreachable = errors.New("cannot reach a broker")

// sleepCtx waits d, false if ctx ends first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// connectError says why no broker answered: a refused authentication or
// TLS handshake is not a matter of waiting longer, so it is not reported as
// one.
func connectError(seeds []string, timeout time.Duration, err error) error {
	at := strings.Join(seeds, ",")
	if errors.Is(err, kerr.SaslAuthenticationFailed) || errors.Is(err, kerr.UnsupportedSaslMechanism) ||
		errors.Is(err, kerr.IllegalSaslState) {
		return fmt.Errorf("authentication failed: %w", err)
	}
	if isTLSError(err) {
		return fmt.Errorf("TLS handshake with %s failed: %w", at, err)
	}
	return fmt.Errorf("%w at %s within %s: %w", errUnreachable, at, timeout, err)
}

// isTLSError reports a failed TLS handshake: the server's certificate
// refused (by crypto/tls, or by a VerifyConnection that checks the chain
// without the host name), an alert from the server (it refused ours), or
// an answer that is not TLS.
func isTLSError(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		alert     tls.AlertError
		header    tls.RecordHeaderError
		authority x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
	)
	return errors.As(err, &verify) || errors.As(err, &alert) || errors.As(err, &header) ||
		errors.As(err, &authority) || errors.As(err, &invalid) || errors.As(err, &hostname)
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

// withClient runs fn with a client whose context ends with --timeout, and
// closes the client afterwards.
func (c *connFlags) withClient(cmd *cobra.Command, fn func(ctx context.Context, cl *kgo.Client) error) error {
	ctx, cancel := c.deadline(cmd)
	defer cancel()
	cl, err := c.client(ctx)
	if err != nil {
		return err
	}
	defer cl.Close()
	return fn(ctx, cl)
}
