package cli

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// NewACLCommand returns `acl add|list|remove`: the cluster's ACLs, with
// kafka-acls' flags (CreateAcls, DescribeAcls, DeleteAcls).
func NewACLCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "acl",
		Short: "Add, list and remove ACLs (like kafka-acls)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	cmd.AddCommand(newACLAdd(conn), newACLList(conn), newACLRemove(conn))
	return cmd
}

// aclFlags are kafka-acls' options.
type aclFlags struct {
	allowPrincipals, denyPrincipals []string
	allowHosts, denyHosts           []string
	operations                      []string
	topics, groups, txnIDs          []string
	cluster                         bool
	patternType                     string
	producer, consumer, idempotent  bool
}

func (f *aclFlags) register(fs *pflag.FlagSet, defaultPattern string, shortcuts bool) {
	fs.StringArrayVar(&f.allowPrincipals, "allow-principal", nil, "principal (Type:name, User:* for all) the ACL allows (repeatable)")
	fs.StringArrayVar(&f.denyPrincipals, "deny-principal", nil, "principal (Type:name, User:* for all) the ACL denies (repeatable)")
	fs.StringArrayVar(&f.allowHosts, "allow-host", nil, "host the allow ACLs apply to (repeatable; default * with --allow-principal)")
	fs.StringArrayVar(&f.denyHosts, "deny-host", nil, "host the deny ACLs apply to (repeatable; default * with --deny-principal)")
	fs.StringArrayVar(&f.operations, "operation", nil, "operation: Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs, AlterConfigs, IdempotentWrite, CreateTokens, DescribeTokens, All (repeatable)")
	fs.StringArrayVar(&f.topics, "topic", nil, "topic (repeatable; * for all)")
	fs.StringArrayVar(&f.groups, "group", nil, "consumer group (repeatable; * for all)")
	fs.StringArrayVar(&f.txnIDs, "transactional-id", nil, "transactional id (repeatable; * for all)")
	fs.BoolVar(&f.cluster, "cluster", false, "the cluster resource")
	fs.StringVar(&f.patternType, "resource-pattern-type", defaultPattern, "literal or prefixed; for list and remove also any and match")
	if shortcuts {
		fs.BoolVar(&f.producer, "producer", false, "producer ACLs: WRITE, DESCRIBE, CREATE on --topic (WRITE, DESCRIBE on --transactional-id)")
		fs.BoolVar(&f.consumer, "consumer", false, "consumer ACLs: READ, DESCRIBE on --topic, READ on --group")
		fs.BoolVar(&f.idempotent, "idempotent", false, "with --producer: IDEMPOTENT_WRITE on the cluster")
	}
}

func (f *aclFlags) pattern(allowed ...kadm.ACLPattern) (kadm.ACLPattern, error) {
	p, err := kmsg.ParseACLResourcePatternType(f.patternType)
	if err != nil || !slices.Contains(allowed, p) {
		var names []string
		for _, a := range allowed {
			names = append(names, strings.ToLower(a.String()))
		}
		return 0, fmt.Errorf("--resource-pattern-type %q: want %s", f.patternType, strings.Join(names, ", "))
	}
	return p, nil
}

func parseOperations(names []string) ([]kadm.ACLOperation, error) {
	var ops []kadm.ACLOperation
	for _, n := range names {
		op, err := kmsg.ParseACLOperation(strings.ReplaceAll(n, "-", ""))
		if err != nil || op == kmsg.ACLOperationUnknown || op == kmsg.ACLOperationAny {
			return nil, fmt.Errorf("--operation %q: not an ACL operation", n)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// grant is some operations on some resources of one type.
type grant struct {
	resourceType kmsg.ACLResourceType
	names        []string
	ops          []kadm.ACLOperation
}

// grants are the ACLs `acl add` creates: --operation on every resource
// given, or what --producer and --consumer stand for (kafka-acls').
func (f *aclFlags) grants() ([]grant, error) {
	var out []grant
	add := func(rt kmsg.ACLResourceType, names []string, ops ...kadm.ACLOperation) {
		if len(names) > 0 {
			out = append(out, grant{rt, names, ops})
		}
	}
	if f.producer || f.consumer {
		if len(f.operations) > 0 || f.cluster {
			return nil, errors.New("--producer and --consumer take no --operation or --cluster")
		}
		if len(f.topics) == 0 {
			return nil, errors.New("--producer and --consumer need --topic")
		}
		if f.consumer && len(f.groups) == 0 {
			return nil, errors.New("--consumer needs --group")
		}
		if f.producer {
			add(kmsg.ACLResourceTypeTopic, f.topics, kadm.OpWrite, kadm.OpDescribe, kadm.OpCreate)
			add(kmsg.ACLResourceTypeTransactionalId, f.txnIDs, kadm.OpWrite, kadm.OpDescribe)
			if f.idempotent {
				add(kmsg.ACLResourceTypeCluster, []string{"kafka-cluster"}, kadm.OpIdempotentWrite)
			}
		}
		if f.consumer {
			add(kmsg.ACLResourceTypeTopic, f.topics, kadm.OpRead, kadm.OpDescribe)
			add(kmsg.ACLResourceTypeGroup, f.groups, kadm.OpRead)
		}
		return out, nil
	}
	if f.idempotent {
		return nil, errors.New("--idempotent goes with --producer")
	}
	ops, err := parseOperations(f.operations)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		ops = []kadm.ACLOperation{kadm.OpAll}
	}
	add(kmsg.ACLResourceTypeTopic, f.topics, ops...)
	add(kmsg.ACLResourceTypeGroup, f.groups, ops...)
	add(kmsg.ACLResourceTypeTransactionalId, f.txnIDs, ops...)
	if f.cluster {
		add(kmsg.ACLResourceTypeCluster, []string{"kafka-cluster"}, ops...)
	}
	if len(out) == 0 {
		return nil, errors.New("give a resource: --topic, --group, --transactional-id or --cluster")
	}
	return out, nil
}

// resources sets the builder's resources of g.
func (g grant) resources(b *kadm.ACLBuilder) *kadm.ACLBuilder {
	switch g.resourceType {
	case kmsg.ACLResourceTypeTopic:
		return b.Topics(g.names...)
	case kmsg.ACLResourceTypeGroup:
		return b.Groups(g.names...)
	case kmsg.ACLResourceTypeTransactionalId:
		return b.TransactionalIDs(g.names...)
	}
	return b.Clusters()
}

// principals sets the builder's principals and hosts; a filter without
// principals matches every principal and host.
func (f *aclFlags) principals(b *kadm.ACLBuilder, filter bool) *kadm.ACLBuilder {
	hosts := func(h []string) []string {
		if len(h) == 0 && !filter {
			return []string{"*"}
		}
		return h
	}
	if filter && len(f.allowPrincipals) == 0 && len(f.denyPrincipals) == 0 {
		return b.Allow().Deny().AllowHosts().DenyHosts()
	}
	if len(f.allowPrincipals) > 0 {
		b = b.Allow(f.allowPrincipals...).AllowHosts(hosts(f.allowHosts)...)
	}
	if len(f.denyPrincipals) > 0 {
		b = b.Deny(f.denyPrincipals...).DenyHosts(hosts(f.denyHosts)...)
	}
	return b
}

func newACLAdd(conn *connFlags) *cobra.Command {
	f := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "add (--allow-principal P | --deny-principal P)... RESOURCE... (--operation OP... | --producer | --consumer)",
		Short: "Create ACLs: every principal x host x operation x resource given",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(f.allowPrincipals) == 0 && len(f.denyPrincipals) == 0 {
				return errors.New("give --allow-principal or --deny-principal")
			}
			pattern, err := f.pattern(kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed)
			if err != nil {
				return err
			}
			grants, err := f.grants()
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				for _, g := range grants {
					pt := pattern
					if g.resourceType == kmsg.ACLResourceTypeCluster {
						pt = kadm.ACLPatternLiteral // the cluster has one name
					}
					b := f.principals(g.resources(kadm.NewACLs()), false).Operations(g.ops...).ResourcePatternType(pt)
					res, err := adm.CreateACLs(ctx, b)
					if err != nil {
						return fmt.Errorf("add ACLs: %w", err)
					}
					for _, r := range res {
						line := aclLine(r.Type, r.Pattern, r.Name, r.Principal, r.Host, r.Operation, r.Permission)
						if r.Err != nil {
							return fmt.Errorf("add %s: %s", line, errText(r.Err, r.ErrMessage))
						}
						fmt.Fprintf(cmd.OutOrStdout(), "Added %s\n", line)
					}
				}
				return nil
			})
		},
	}
	f.register(cmd.Flags(), "literal", true)
	return cmd
}

// filter is the builder of list and remove: the resources given (every
// resource when none), the principals given (every one when none), and
// the operations given (every one when none).
func (f *aclFlags) filter() (*kadm.ACLBuilder, error) {
	pattern, err := f.pattern(kadm.ACLPatternLiteral, kadm.ACLPatternPrefixed, kadm.ACLPatternAny, kadm.ACLPatternMatch)
	if err != nil {
		return nil, err
	}
	ops, err := parseOperations(f.operations)
	if err != nil {
		return nil, err
	}
	if len(ops) == 0 {
		ops = []kadm.ACLOperation{kadm.OpAny}
	}
	b := kadm.NewACLs()
	switch {
	case len(f.topics) == 0 && len(f.groups) == 0 && len(f.txnIDs) == 0 && !f.cluster:
		b = b.AnyResource()
	default:
		if len(f.topics) > 0 {
			b = b.Topics(f.topics...)
		}
		if len(f.groups) > 0 {
			b = b.Groups(f.groups...)
		}
		if len(f.txnIDs) > 0 {
			b = b.TransactionalIDs(f.txnIDs...)
		}
		if f.cluster {
			b = b.Clusters()
		}
	}
	return f.principals(b, true).Operations(ops...).ResourcePatternType(pattern), nil
}

func newACLList(conn *connFlags) *cobra.Command {
	f := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "list [RESOURCE...] [--allow-principal P | --deny-principal P]... [--operation OP]...",
		Short: "List ACLs (all of them without filters)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := f.filter()
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.DescribeACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("list ACLs: %w", err)
				}
				var lines []string
				for _, r := range res {
					if r.Err != nil {
						return fmt.Errorf("list ACLs: %s", errText(r.Err, r.ErrMessage))
					}
					for _, d := range r.Described {
						lines = append(lines, aclLine(d.Type, d.Pattern, d.Name, d.Principal, d.Host, d.Operation, d.Permission))
					}
				}
				slices.Sort(lines)
				for _, l := range slices.Compact(lines) {
					fmt.Fprintln(cmd.OutOrStdout(), l)
				}
				return nil
			})
		},
	}
	f.register(cmd.Flags(), "any", false)
	return cmd
}

func newACLRemove(conn *connFlags) *cobra.Command {
	f := &aclFlags{}
	cmd := &cobra.Command{
		Use:   "remove RESOURCE... [--allow-principal P | --deny-principal P]... [--operation OP]...",
		Short: "Remove the ACLs matching the filter (all principals and operations of the resources when none are given)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if len(f.topics) == 0 && len(f.groups) == 0 && len(f.txnIDs) == 0 && !f.cluster {
				return errors.New("give a resource: --topic, --group, --transactional-id or --cluster")
			}
			b, err := f.filter()
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.DeleteACLs(ctx, b)
				if err != nil {
					return fmt.Errorf("remove ACLs: %w", err)
				}
				var lines []string
				for _, r := range res {
					if r.Err != nil {
						return fmt.Errorf("remove ACLs: %s", errText(r.Err, r.ErrMessage))
					}
					for _, d := range r.Deleted {
						lines = append(lines, aclLine(d.Type, d.Pattern, d.Name, d.Principal, d.Host, d.Operation, d.Permission))
					}
				}
				slices.Sort(lines)
				for _, l := range slices.Compact(lines) {
					fmt.Fprintf(cmd.OutOrStdout(), "Removed %s\n", l)
				}
				return nil
			})
		},
	}
	f.register(cmd.Flags(), "literal", false)
	return cmd
}

// aclLine is one ACL on one line, kafka-acls' words.
func aclLine(rt kmsg.ACLResourceType, pt kadm.ACLPattern, name, principal, host string, op kadm.ACLOperation, perm kmsg.ACLPermissionType) string {
	return fmt.Sprintf("(resourceType=%s, name=%s, patternType=%s) (principal=%s, host=%s, operation=%s, permissionType=%s)",
		rt, name, pt, principal, host, op, perm)
}

func errText(err error, msg string) string {
	if msg != "" {
		return fmt.Sprintf("%v: %s", err, msg)
	}
	return err.Error()
}
