package cli

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewQuotaCommand returns `quota set|describe|delete`: client quotas, with
// kafka-configs' entity flags (--entity-type users|clients|ips with
// --entity-name or --entity-default) and --add-config / --delete-config
// (AlterClientQuotas, DescribeClientQuotas).
func NewQuotaCommand() *cobra.Command {
	conn := &connFlags{}
	ent := &quotaEntityFlags{}
	cmd := &cobra.Command{
		Use:   "quota",
		Short: "Set, describe and delete client quotas (like kafka-configs --entity-type users/clients/ips)",
		Long: "Set, describe and delete client quotas of users, client ids, users' client ids and IPs.\n" +
			"An entity is one --entity-type with an --entity-name or --entity-default, or users and\n" +
			"clients together (--entity-type users --entity-name alice --entity-type clients\n" +
			"--entity-name app); names pair with types in the order given, as in kafka-configs.\n" +
			"Quotas: producer_byte_rate, consumer_byte_rate, request_percentage,\n" +
			"controller_mutation_rate (users and clients), connection_creation_rate (ips).",
	}
	conn.register(cmd, cmd.PersistentFlags())
	ent.register(cmd.PersistentFlags())
	cmd.AddCommand(newQuotaSet(conn, ent), newQuotaDescribe(conn, ent), newQuotaDelete(conn, ent))
	return cmd
}

// quotaEntityTypes maps kafka-configs' entity types to the quota APIs'.
var quotaEntityTypes = map[string]string{"users": "user", "clients": "client-id", "ips": "ip"}

// quotaEntityFlags are the entity flags in the order given: --entity-type
// values, and --entity-name / --entity-default values (nil for a default)
// in one list, which pairs with the types by position.
type quotaEntityFlags struct {
	types []string
	names []*string
}

// entityNameValue appends to quotaEntityFlags.names: a name, or nil for
// --entity-default.
type entityNameValue struct {
	names     *[]*string
	isDefault bool
}

func (v *entityNameValue) String() string { return "" }

func (v *entityNameValue) Type() string {
	if v.isDefault {
		return "bool"
	}
	return "string"
}

func (v *entityNameValue) Set(s string) error {
	if v.isDefault {
		if s != "true" {
			return errors.New("takes no value")
		}
		*v.names = append(*v.names, nil)
		return nil
	}
	*v.names = append(*v.names, &s)
	return nil
}

func (f *quotaEntityFlags) register(fs *pflag.FlagSet) {
	fs.StringArrayVar(&f.types, "entity-type", nil, "users, clients or ips (repeatable: users and clients together)")
	fs.Var(&entityNameValue{names: &f.names}, "entity-name", "the name of the entity of the --entity-type at the same position (repeatable)")
	fs.Var(&entityNameValue{names: &f.names, isDefault: true}, "entity-default", "the default entity of the --entity-type at the same position (repeatable)")
	fs.Lookup("entity-default").NoOptDefVal = "true"
}

// quotaPart is one resolved part of an entity: an API entity type and, if
// named, a name (nil for the default).
type quotaPart struct {
	entityType string
	named      bool
	name       *string
}

// resolve pairs the entity flags. complete requires a name or default for
// every type and at least one type (set and delete name one entity).
func (f *quotaEntityFlags) resolve(complete bool) ([]quotaPart, error) {
	if len(f.names) > len(f.types) {
		return nil, errors.New("more --entity-name/--entity-default than --entity-type")
	}
	if complete && (len(f.types) == 0 || len(f.names) != len(f.types)) {
		return nil, errors.New("give --entity-type with --entity-name or --entity-default for each (users, clients or ips)")
	}
	var parts []quotaPart
	seen := map[string]bool{}
	for i, t := range f.types {
		typ, ok := quotaEntityTypes[t]
		if !ok {
			return nil, fmt.Errorf("--entity-type %q: want users, clients or ips", t)
		}
		if seen[typ] {
			return nil, fmt.Errorf("--entity-type %s is given twice", t)
		}
		seen[typ] = true
		p := quotaPart{entityType: typ}
		if i < len(f.names) {
			p.named, p.name = true, f.names[i]
			if p.name != nil && *p.name == "" {
				return nil, fmt.Errorf("--entity-name for %s is empty (use --entity-default for the default entity)", t)
			}
		}
		parts = append(parts, p)
	}
	if seen["ip"] && len(parts) > 1 {
		return nil, errors.New("--entity-type ips cannot be combined with users or clients")
	}
	return parts, nil
}

// entity is the parts as an AlterClientQuotas entity; every part is named.
func quotaEntityOf(parts []quotaPart) kadm.ClientQuotaEntity {
	e := make(kadm.ClientQuotaEntity, len(parts))
	for i, p := range parts {
		e[i] = kadm.ClientQuotaEntityComponent{Type: p.entityType, Name: p.name}
	}
	return e
}

// quotaEntityText names an entity as kafka-configs does: "user-principal
// 'alice', client-id 'app'", "the default ip".
func quotaEntityText(e kadm.ClientQuotaEntity) string {
	rank := map[string]int{"user": 0, "client-id": 1, "ip": 2}
	sorted := slices.Clone(e)
	slices.SortStableFunc(sorted, func(a, b kadm.ClientQuotaEntityComponent) int { return rank[a.Type] - rank[b.Type] })
	out := make([]string, len(sorted))
	for i, c := range sorted {
		typ := c.Type
		if typ == "user" {
			typ = "user-principal"
		}
		if c.Name == nil {
			out[i] = "the default " + typ
		} else {
			out[i] = fmt.Sprintf("%s '%s'", typ, *c.Name)
		}
	}
	return strings.Join(out, ", ")
}

// javaDouble formats a quota value as Java's Double.toString, which
// kafka-configs prints: 1048576.0, 25.5, 1.048576E7.
func javaDouble(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		switch {
		case math.IsNaN(v):
			return "NaN"
		case v > 0:
			return "Infinity"
		}
		return "-Infinity"
	}
	if a := math.Abs(v); a == 0 || (a >= 1e-3 && a < 1e7) {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64)
	mantissa, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mantissa, ".") {
		mantissa += ".0"
	}
	n, _ := strconv.Atoi(exp)
	return mantissa + "E" + strconv.Itoa(n)
}

// alterQuotas sends one entity's ops and returns its result's error.
func alterQuotas(ctx context.Context, adm *kadm.Client, entity kadm.ClientQuotaEntity, ops []kadm.AlterClientQuotaOp) error {
	res, err := adm.AlterClientQuotas(ctx, []kadm.AlterClientQuotaEntry{{Entity: entity, Ops: ops}})
	if err != nil {
		return err
	}
	if len(res) != 1 {
		return errors.New("the cluster did not answer for this entity")
	}
	if r := res[0]; r.Err != nil {
		return withBrokerMessage(r.Err, r.ErrMessage)
	}
	return nil
}

func newQuotaSet(conn *connFlags, ent *quotaEntityFlags) *cobra.Command {
	var addConfig []string
	cmd := &cobra.Command{
		Use:   "set --entity-type TYPE (--entity-name NAME | --entity-default) ... --add-config KEY=VALUE[,KEY=VALUE...]",
		Short: "Set quotas of one entity (others it has stay)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts, err := ent.resolve(true)
			if err != nil {
				return err
			}
			if len(addConfig) == 0 {
				return errors.New("--add-config is required")
			}
			kv, order, err := parseKeyValues("add-config", addConfig)
			if err != nil {
				return err
			}
			ops := make([]kadm.AlterClientQuotaOp, 0, len(order))
			for _, k := range order {
				v, err := strconv.ParseFloat(strings.TrimSpace(kv[k]), 64)
				if err != nil {
					return fmt.Errorf("cannot parse quota configuration value for %s: %q", k, kv[k])
				}
				ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Value: v})
			}
			entity := quotaEntityOf(parts)
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				if err := alterQuotas(ctx, adm, entity, ops); err != nil {
					return fmt.Errorf("set quotas of %s: %w", quotaEntityText(entity), err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for %s.\n", quotaEntityText(entity))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&addConfig, "add-config", nil, "quotas to set, key=value[,key=value...] (repeatable)")
	return cmd
}

func newQuotaDelete(conn *connFlags, ent *quotaEntityFlags) *cobra.Command {
	var deleteConfig []string
	cmd := &cobra.Command{
		Use:   "delete --entity-type TYPE (--entity-name NAME | --entity-default) ... --delete-config KEY[,KEY...]",
		Short: "Remove quotas of one entity",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts, err := ent.resolve(true)
			if err != nil {
				return err
			}
			var keys []string
			for _, item := range deleteConfig {
				for _, k := range strings.Split(item, ",") {
					if k = strings.TrimSpace(k); k != "" && !slices.Contains(keys, k) {
						keys = append(keys, k)
					}
				}
			}
			if len(keys) == 0 {
				return errors.New("--delete-config is required")
			}
			entity := quotaEntityOf(parts)
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				// As kafka-configs: only quotas the entity has can be deleted.
				current, err := describeQuotas(ctx, adm, true, parts)
				if err != nil {
					return fmt.Errorf("describe quotas of %s: %w", quotaEntityText(entity), err)
				}
				have := map[string]bool{}
				for _, d := range current {
					for _, v := range d.Values {
						have[v.Key] = true
					}
				}
				var missing []string
				ops := make([]kadm.AlterClientQuotaOp, 0, len(keys))
				for _, k := range keys {
					if !have[k] {
						missing = append(missing, k)
					}
					ops = append(ops, kadm.AlterClientQuotaOp{Key: k, Remove: true})
				}
				if len(missing) > 0 {
					return fmt.Errorf("%s has no quota %s", quotaEntityText(entity), strings.Join(missing, ", "))
				}
				if err := alterQuotas(ctx, adm, entity, ops); err != nil {
					return fmt.Errorf("delete quotas of %s: %w", quotaEntityText(entity), err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for %s.\n", quotaEntityText(entity))
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&deleteConfig, "delete-config", nil, "quotas to remove, key[,key...] (repeatable)")
	return cmd
}

// describeQuotas asks for the entities the parts select: a named part
// matches that name (or the default), a type alone any name; strict
// leaves out entities with other parts.
func describeQuotas(ctx context.Context, adm *kadm.Client, strict bool, parts []quotaPart) (kadm.DescribedClientQuotas, error) {
	filter := make([]kadm.DescribeClientQuotaComponent, len(parts))
	for i, p := range parts {
		c := kadm.DescribeClientQuotaComponent{Type: p.entityType, MatchType: kmsg.QuotasMatchTypeAny}
		switch {
		case p.named && p.name == nil:
			c.MatchType = kmsg.QuotasMatchTypeDefault
		case p.named:
			c.MatchType, c.MatchName = kmsg.QuotasMatchTypeExact, p.name
		}
		filter[i] = c
	}
	return adm.DescribeClientQuotas(ctx, strict, filter)
}

func newQuotaDescribe(conn *connFlags, ent *quotaEntityFlags) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "describe [--entity-type TYPE [--entity-name NAME | --entity-default]] ...",
		Short: "Show quotas: of the entities of exactly the types given (a type without a name: any name), or all",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			parts, err := ent.resolve(false)
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				// With entity flags only entities of exactly those types, as
				// kafka-configs (ClientQuotaFilter.containsOnly); without, all.
				described, err := describeQuotas(ctx, adm, len(parts) > 0, parts)
				if err != nil {
					return fmt.Errorf("describe quotas: %w", err)
				}
				out := cmd.OutOrStdout()
				for _, d := range described {
					values := map[string]float64{}
					for _, v := range d.Values {
						values[v.Key] = v.Value
					}
					var kvs []string
					for _, k := range slices.Sorted(maps.Keys(values)) {
						kvs = append(kvs, k+"="+javaDouble(values[k]))
					}
					fmt.Fprintf(out, "Quota configs for %s are %s\n", quotaEntityText(d.Entity), strings.Join(kvs, ", "))
				}
				return nil
			})
		},
	}
	return cmd
}
