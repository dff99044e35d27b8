package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"gregor/internal/config"
	"gregor/internal/server"
)

func newServerCommand() *cobra.Command {
	var (
		configFile string
		overrides  []string
		logLevel   string
	)
	cmd := &cobra.Command{
		Use:   "server [server.properties]",
		Short: "Run a broker and/or controller (with no flags: a complete single-node cluster on 127.0.0.1:9092)",
		Long: `Run a Gregor node. With no flags it is a complete single-node cluster:
broker and controller in one process (process.roles=broker,controller),
PLAINTEXT on 127.0.0.1:9092, the controller listener on 127.0.0.1:9093,
data in ./gregor-data. --config reads a Kafka server.properties file;
--override key=value (repeatable) sets one key on top of it, as
kafka-server-start.sh does (which also takes the file as its argument).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				if configFile != "" && configFile != args[0] {
					return fmt.Errorf("two config files given: %s and --config %s", args[0], configFile)
				}
				configFile = args[0]
			}
			props, err := loadProperties(configFile, overrides)
			if err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", logLevel)
			}
			logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

			cfg, warnings, err := config.Load(props)
			if err != nil {
				return err
			}
			for _, w := range warnings {
				logger.Warn(string(w))
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			srv, err := server.New(cfg, logger)
			if err != nil {
				return err
			}
			if err := srv.Start(ctx); err != nil {
				if ctx.Err() != nil {
					// SIGTERM during start-up (say, while waiting for the
					// controllers): a requested stop, not a failure.
					logger.Info("stopped during start-up", "err", err)
					return nil
				}
				return err
			}
			<-ctx.Done()
			logger.Info("shutting down")
			shutdownCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			if err := srv.Shutdown(shutdownCtx); err != nil {
				return fmt.Errorf("shutdown: %w", err)
			}
			logger.Info("stopped")
			return nil
		},
	}
	cmd.Flags().StringVar(&configFile, "config", "", "server.properties file")
	cmd.Flags().StringArrayVar(&overrides, "override", nil, "key=value on top of the config file (repeatable)")
	cmd.Flags().StringVar(&logLevel, "log-level", "info", "debug, info, warn or error")
	return cmd
}

// loadProperties reads a server.properties file (if given) and applies
// --override key=value entries on top of it.
func loadProperties(configFile string, overrides []string) (map[string]string, error) {
	props := map[string]string{}
	if configFile != "" {
		f, err := os.Open(configFile)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		props, err = config.ParseProperties(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("parse %s: %w", configFile, err)
		}
	}
	for _, o := range overrides {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("--override %q: want key=value", o)
		}
		props[strings.TrimSpace(k)] = v
	}
	return props, nil
}
