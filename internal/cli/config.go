package cli

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewConfigCommand returns `config get|set|delete`, Gregor's kafka-configs
// for topics and brokers.
func NewConfigCommand() *cobra.Command {
	conn := &connFlags{}
	ent := &entityFlags{}
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Show and change topic and broker configs (like kafka-configs)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	ent.register(cmd)
	cmd.AddCommand(newConfigGet(conn, ent), newConfigSet(conn, ent), newConfigDelete(conn, ent))
	return cmd
}

// entityFlags name what a config command is about, as kafka-configs does:
// --entity-type topics|brokers --entity-name X, or the shortcuts --topic X,
// --broker ID and --broker-defaults (the cluster-wide broker default).
type entityFlags struct {
	entityType, entityName string
	topic, broker          string
	entityDefault          bool
}

func (e *entityFlags) register(cmd *cobra.Command) {
	fs := cmd.PersistentFlags()
	fs.StringVar(&e.entityType, "entity-type", "", "topics or brokers")
	fs.StringVar(&e.entityName, "entity-name", "", "the topic name or broker id")
	fs.BoolVar(&e.entityDefault, "entity-default", false, "the cluster-wide default (brokers only)")
	fs.StringVar(&e.topic, "topic", "", "shortcut for --entity-type topics --entity-name TOPIC")
	fs.StringVar(&e.broker, "broker", "", "shortcut for --entity-type brokers --entity-name ID")
	fs.BoolVar(&e.entityDefault, "broker-defaults", false, "shortcut for --entity-type brokers --entity-default")
	_ = cmd.RegisterFlagCompletionFunc("entity-type", func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return []string{"topics", "brokers"}, cobra.ShellCompDirectiveNoFileComp
	})
}

// entity is the resolved config resource.
type entity struct {
	topic  bool   // a topic, else a broker
	name   string // topic name, broker id, or "" for the broker default
	broker int32
}

func (e entity) String() string {
	switch {
	case e.topic:
		return "topic " + e.name
	case e.name == "":
		return "the default broker config"
	default:
		return "broker " + e.name
	}
}

func (e *entityFlags) resolve() (entity, error) {
	typ, name := e.entityType, e.entityName
	shortcuts := 0
	if e.topic != "" {
		typ, name = "topics", e.topic
		shortcuts++
	}
	if e.broker != "" {
		typ, name = "brokers", e.broker
		shortcuts++
	}
	if shortcuts > 1 || (shortcuts == 1 && e.entityType != "" && e.entityType != typ) {
		return entity{}, errors.New("give one entity: --topic, --broker or --entity-type/--entity-name")
	}
	if e.entityDefault && typ == "" {
		typ = "brokers"
	}
	switch typ {
	case "topics", "topic":
		if name == "" {
			return entity{}, errors.New("--entity-name TOPIC is required for topics")
		}
		return entity{topic: true, name: name}, nil
	case "brokers", "broker":
		if e.entityDefault {
			if name != "" {
				return entity{}, errors.New("give either --entity-name or --entity-default, not both")
			}
			return entity{}, nil
		}
		id, err := strconv.ParseInt(name, 10, 32)
		if err != nil {
			return entity{}, fmt.Errorf("--entity-name for brokers must be a broker id, got %q", name)
		}
		return entity{name: name, broker: int32(id)}, nil
	case "":
		return entity{}, errors.New("--entity-type topics|brokers is required (or --topic / --broker)")
	default:
		return entity{}, fmt.Errorf("--entity-type %q: want topics or brokers", typ)
	}
}

func newConfigGet(conn *connFlags, ent *entityFlags) *cobra.Command {
	var all bool
	cmd := &cobra.Command{
		Use:     "get --entity-type topics|brokers --entity-name X",
		Aliases: []string{"describe"}, // kafka-configs --describe
		Short:   "Show the configs set on a topic or broker (--all: every config with its source)",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := ent.resolve()
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				var rcs kadm.ResourceConfigs
				if e.topic {
					rcs, err = adm.DescribeTopicConfigs(ctx, e.name)
				} else if e.name == "" {
					rcs, err = adm.DescribeBrokerConfigs(ctx)
				} else {
					rcs, err = adm.DescribeBrokerConfigs(ctx, e.broker)
				}
				if err != nil {
					return fmt.Errorf("describe configs of %s: %w", e, err)
				}
				rc, err := rcs.On(e.name, nil)
				if err == nil {
					err = rc.Err
				}
				if err != nil {
					if e.topic {
						return topicErr(e.name, err)
					}
					return fmt.Errorf("describe configs of %s: %w", e, err)
				}
				configs := rc.Configs
				sort.Slice(configs, func(i, j int) bool { return configs[i].Key < configs[j].Key })
				out := cmd.OutOrStdout()
				if all {
					fmt.Fprintf(out, "All configs for %s are:\n", e)
				} else {
					fmt.Fprintf(out, "Dynamic configs for %s are:\n", e)
				}
				for _, c := range configs {
					if !all && c.Source != dynamicSource(e.topic, e.name) {
						continue
					}
					fmt.Fprintf(out, "  %s=%s sensitive=%t synonyms={%s}\n", c.Key, configValue(c), c.Sensitive, synonyms(c))
				}
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "show every config, defaults included")
	return cmd
}

// dynamicSource is the one source kafka-configs --describe shows without
// --all for an entity: a topic's own dynamic configs, the cluster-wide
// broker defaults, or one broker's dynamic configs (a value inherited from
// a wider level is not the entity's).
func dynamicSource(topic bool, name string) kmsg.ConfigSource {
	switch {
	case topic:
		return kmsg.ConfigSourceDynamicTopicConfig
	case name == "":
		return kmsg.ConfigSourceDynamicDefaultBrokerConfig
	}
	return kmsg.ConfigSourceDynamicBrokerConfig
}

func synonyms(c kadm.Config) string {
	parts := make([]string, 0, len(c.Synonyms))
	for _, s := range c.Synonyms {
		v := "null"
		if s.Value != nil {
			v = *s.Value
		}
		parts = append(parts, s.Source.String()+":"+s.Key+"="+v)
	}
	return strings.Join(parts, ", ")
}

func newConfigSet(conn *connFlags, ent *entityFlags) *cobra.Command {
	var adds []string
	cmd := &cobra.Command{
		Use:   "set --entity-type topics|brokers --entity-name X --add-config k=v[,k=v]",
		Short: "Set configs on a topic or broker (IncrementalAlterConfigs SET)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(adds) == 0 {
				return errors.New("--add-config k=v is required")
			}
			alters, err := alterConfigs(adds, nil)
			if err != nil {
				return err
			}
			return runAlter(cmd, conn, ent, alters)
		},
	}
	cmd.Flags().StringArrayVar(&adds, "add-config", nil, "configs to set, k=v[,k=v] (a value with commas in brackets: k=[a,b]); repeatable")
	return cmd
}

func newConfigDelete(conn *connFlags, ent *entityFlags) *cobra.Command {
	var deletes []string
	cmd := &cobra.Command{
		Use:   "delete --entity-type topics|brokers --entity-name X --delete-config k[,k]",
		Short: "Remove configs from a topic or broker, falling back to the default (IncrementalAlterConfigs DELETE)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var keys []string
			for _, d := range deletes {
				keys = append(keys, splitOutsideBrackets(d)...)
			}
			if len(keys) == 0 {
				return errors.New("--delete-config k is required")
			}
			alters, err := alterConfigs(nil, keys)
			if err != nil {
				return err
			}
			return runAlter(cmd, conn, ent, alters)
		},
	}
	cmd.Flags().StringArrayVar(&deletes, "delete-config", nil, "config keys to remove, k[,k]; repeatable")
	return cmd
}

func runAlter(cmd *cobra.Command, conn *connFlags, ent *entityFlags, alters []kadm.AlterConfig) error {
	e, err := ent.resolve()
	if err != nil {
		return err
	}
	return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
		if e.topic {
			err = alterTopicConfigs(ctx, adm, e.name, alters)
		} else {
			var resps kadm.AlterConfigsResponses
			if e.name == "" {
				resps, err = adm.AlterBrokerConfigs(ctx, alters)
			} else {
				resps, err = adm.AlterBrokerConfigs(ctx, alters, e.broker)
			}
			if err == nil {
				err = firstAlterErr(resps)
			}
			if err != nil {
				err = fmt.Errorf("alter configs of %s: %w", e, err)
			}
		}
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for %s.\n", e)
		return nil
	})
}

// alterConfigs builds incremental SET and DELETE operations.
func alterConfigs(sets, deletes []string) ([]kadm.AlterConfig, error) {
	kv, order, err := parseKeyValues("config", sets)
	if err != nil {
		return nil, err
	}
	var alters []kadm.AlterConfig
	for _, k := range order {
		alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(kv[k])})
	}
	for _, d := range deletes {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		if _, both := kv[d]; both {
			return nil, fmt.Errorf("config %q is both set and deleted", d)
		}
		alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: d})
	}
	if len(alters) == 0 {
		return nil, errors.New("nothing to change: give --config k=v or --delete-config k")
	}
	return alters, nil
}

func alterTopicConfigs(ctx context.Context, adm *kadm.Client, topic string, alters []kadm.AlterConfig) error {
	resps, err := adm.AlterTopicConfigs(ctx, alters, topic)
	if err == nil {
		err = firstAlterErr(resps)
	}
	if err != nil {
		return topicErr(topic, err)
	}
	return nil
}

func firstAlterErr(resps kadm.AlterConfigsResponses) error {
	for _, r := range resps {
		if r.Err != nil {
			if errors.Is(r.Err, kerr.UnknownTopicOrPartition) {
				return r.Err
			}
			return withBrokerMessage(r.Err, r.ErrMessage)
		}
	}
	return nil
}
