package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"gregor/internal/auth/sasl"
)

// NewUserCommand returns `user scram set|describe|delete`: users' SCRAM
// credentials, as kafka-configs --entity-type users --add-config
// 'SCRAM-SHA-256=[iterations=8192,password=...]' / --delete-config /
// --describe manage them (AlterUserScramCredentials,
// DescribeUserScramCredentials).
func NewUserCommand() *cobra.Command {
	conn := &connFlags{}
	cmd := &cobra.Command{
		Use:   "user",
		Short: "Manage users' SCRAM credentials (like kafka-configs --entity-type users)",
	}
	conn.register(cmd, cmd.PersistentFlags())
	scram := &cobra.Command{
		Use:   "scram",
		Short: "Set, describe and delete SCRAM-SHA-256/512 credentials",
	}
	scram.AddCommand(newScramSet(conn), newScramDescribe(conn), newScramDelete(conn))
	cmd.AddCommand(scram)
	return cmd
}

// scramMechanism resolves --mechanism (in any case).
func scramMechanism(name string) (sasl.ScramMechanism, error) {
	if name == "" {
		return sasl.ScramMechanism{}, fmt.Errorf("--mechanism is required (%s or %s)", sasl.ScramSHA256, sasl.ScramSHA512)
	}
	m, ok := sasl.ScramMechanismByName(strings.ToUpper(name))
	if !ok {
		return sasl.ScramMechanism{}, fmt.Errorf("--mechanism %q: want %s or %s", name, sasl.ScramSHA256, sasl.ScramSHA512)
	}
	return m, nil
}

func newScramSet(conn *connFlags) *cobra.Command {
	var (
		user, mechanism, password, passwordFile string
		iterations                              int
	)
	cmd := &cobra.Command{
		Use:   "set --user NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512 (--password P | --password-file FILE)",
		Short: "Create or replace a user's credential for one mechanism",
		Long: "Create or replace a user's credential for one mechanism. The password is salted here\n" +
			"(a random salt, PBKDF2 with --iterations); only the salt and the salted password are sent.\n" +
			"--password-file - reads the password from standard input (its first line).",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user == "" {
				return errors.New("--user is required")
			}
			mech, err := scramMechanism(mechanism)
			if err != nil {
				return err
			}
			if err := sasl.CheckScramIterations(iterations); err != nil {
				return fmt.Errorf("--iterations: %w", err)
			}
			pw, err := readPassword(cmd.InOrStdin(), password, passwordFile, cmd.Flags().Changed("password"))
			if err != nil {
				return err
			}
			salt, err := sasl.NewScramSalt()
			if err != nil {
				return err
			}
			salted, err := mech.SaltedPassword(pw, salt, iterations)
			if err != nil {
				return fmt.Errorf("user %q: %w", user, err)
			}
			upsert := kadm.UpsertSCRAM{User: user, Mechanism: kadm.ScramMechanism(mech.Type), Iterations: int32(iterations),
				Salt: salt, SaltedPassword: salted}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{upsert})
				if err == nil {
					err = scramResult(res, user)
				}
				if err != nil {
					return fmt.Errorf("set the %s credential of user %q: %w", mech.Name, user, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for user %s.\n", user)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user name")
	cmd.Flags().StringVar(&mechanism, "mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512")
	cmd.Flags().StringVar(&password, "password", "", "the password (visible to other local users in the process list: prefer --password-file)")
	cmd.Flags().StringVar(&passwordFile, "password-file", "", "read the password from the first line of this file, - for standard input")
	cmd.Flags().IntVar(&iterations, "iterations", sasl.ScramDefaultIterations, fmt.Sprintf("PBKDF2 iterations, %d-%d", sasl.ScramMinIterations, sasl.ScramMaxIterations))
	return cmd
}

// readPassword takes the password from --password or from the first line
// of --password-file (- is stdin); exactly one of them.
func readPassword(stdin io.Reader, password, file string, given bool) (string, error) {
	switch {
	case given && file != "":
		return "", errors.New("give --password or --password-file, not both")
	case given:
		if password == "" {
			return "", errors.New("--password is empty")
		}
		return password, nil
	case file == "":
		return "", errors.New("--password or --password-file is required")
	}
	var b []byte
	var err error
	if file == "-" {
		b, err = io.ReadAll(io.LimitReader(stdin, 1<<20))
	} else {
		b, err = os.ReadFile(file)
	}
	if err != nil {
		return "", fmt.Errorf("read --password-file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSuffix(line, "\r")
	if line == "" {
		return "", fmt.Errorf("--password-file %s: the first line is empty", file)
	}
	return line, nil
}

// scramResult is the error of one user's alteration, with the broker's
// message.
func scramResult(res kadm.AlteredUserSCRAMs, user string) error {
	r, ok := res[user]
	switch {
	case !ok:
		return errors.New("the cluster did not answer for this user")
	case r.Err == nil:
		return nil
	case r.ErrMessage != "":
		return fmt.Errorf("%w (%s)", r.Err, r.ErrMessage)
	}
	return r.Err
}

func newScramDescribe(conn *connFlags) *cobra.Command {
	var users []string
	cmd := &cobra.Command{
		Use:   "describe [--user NAME ...]",
		Short: "Show the mechanisms and iterations of users' credentials (all users by default)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			users = topicArgs(nil, users) // drop repeats: the cluster refuses a user named twice
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				described, err := adm.DescribeUserSCRAMs(ctx, users...)
				if err != nil {
					return fmt.Errorf("describe SCRAM credentials: %w", err)
				}
				out := cmd.OutOrStdout()
				var missing []string
				for _, d := range described.Sorted() {
					switch {
					case errors.Is(d.Err, kerr.ResourceNotFound):
						missing = append(missing, fmt.Sprintf("%q", d.User))
						continue
					case d.Err != nil:
						return fmt.Errorf("describe the SCRAM credentials of user %q: %w", d.User, d.Err)
					}
					infos := make([]string, len(d.CredInfos))
					for i, c := range d.CredInfos {
						infos[i] = c.String()
					}
					fmt.Fprintf(out, "SCRAM credential configs for user-principal '%s' are %s\n", d.User, strings.Join(infos, ", "))
				}
				if len(missing) > 0 {
					return fmt.Errorf("no SCRAM credentials for user %s", strings.Join(missing, ", "))
				}
				return nil
			})
		},
	}
	cmd.Flags().StringArrayVar(&users, "user", nil, "a user to describe (repeatable; default: every user with a credential)")
	return cmd
}

func newScramDelete(conn *connFlags) *cobra.Command {
	var user, mechanism string
	cmd := &cobra.Command{
		Use:   "delete --user NAME --mechanism SCRAM-SHA-256|SCRAM-SHA-512",
		Short: "Delete a user's credential for one mechanism",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if user == "" {
				return errors.New("--user is required")
			}
			mech, err := scramMechanism(mechanism)
			if err != nil {
				return err
			}
			return conn.withAdmin(cmd, func(ctx context.Context, adm *kadm.Client) error {
				res, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: user, Mechanism: kadm.ScramMechanism(mech.Type)}}, nil)
				if err == nil {
					err = scramResult(res, user)
				}
				if errors.Is(err, kerr.ResourceNotFound) {
					return fmt.Errorf("user %q has no %s credential", user, mech.Name)
				}
				if err != nil {
					return fmt.Errorf("delete the %s credential of user %q: %w", mech.Name, user, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Completed updating config for user %s.\n", user)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user name")
	cmd.Flags().StringVar(&mechanism, "mechanism", "", "SCRAM-SHA-256 or SCRAM-SHA-512")
	return cmd
}
