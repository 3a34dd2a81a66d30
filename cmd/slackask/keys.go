package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slackask/slackask/apikeys"
	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
	"github.com/slackask/slackask/store/postgres"
	"github.com/slackask/slackask/store/sqlite"
)

const keysUsage = `usage: slackask keys create --name NAME [--workspace T…]… [--channels C1,C2] [--responders U1,S1]
       slackask keys list [--json]
       slackask keys revoke ID|NAME

Manages the scoped API keys of the database in SLACKASK_DATABASE (a
running serve sees changes at once). A key is printed once, by create, and
only its SHA-256 is stored. Callers send it as "Authorization: Bearer KEY"
(HTTP API and /mcp). A key may ask only in its workspaces, channels (user
ids here allow DMs to them) and of its responders (an ask that names none
takes them), else 403 FORBIDDEN; it sees, waits on, withdraws and lists
only its own asks. An empty scope allows any. SLACKASK_API_TOKEN stays the
all-powerful key.
`

func cmdKeys(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || isHelp(args[0]) {
		fmt.Fprint(stdout, keysUsage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "slackask keys: %v\n", err)
		return 2
	}
	// The database is opened once the arguments are known good.
	open := func() (store.KeyStore, func(), bool) {
		ks, closeKeys, err := openKeys(ctx, cfg.Database)
		if err != nil {
			fmt.Fprintf(stderr, "slackask keys: %v\n", err)
			return nil, nil, false
		}
		return ks, closeKeys, true
	}
	switch args[0] {
	case "create":
		return keysCreate(ctx, open, args[1:], stdout, stderr)
	case "list":
		return keysList(ctx, open, args[1:], stdout, stderr)
	case "revoke":
		if len(args) != 2 || isHelp(args[1]) {
			fmt.Fprintf(stderr, "slackask keys revoke: give one key id or name\n\n%s", keysUsage)
			return 2
		}
		ks, closeKeys, ok := open()
		if !ok {
			return 1
		}
		defer closeKeys()
		k, err := ks.RevokeKey(ctx, args[1], time.Now())
		if errors.Is(err, store.ErrNoKey) {
			fmt.Fprintf(stderr, "slackask keys revoke: no key with id or name %q\n", args[1])
			return 1
		}
		if err != nil {
			fmt.Fprintf(stderr, "slackask keys revoke: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "revoked %s (%s) at %s\n", k.ID, k.Name, k.RevokedAt.Format(time.RFC3339))
		return 0
	default:
		fmt.Fprintf(stderr, "slackask keys: unknown subcommand %q\n\n%s", args[0], keysUsage)
		return 2
	}
}

// keysOpener opens the key store once a subcommand's arguments are
// checked; false (said on stderr) when it cannot.
type keysOpener func() (ks store.KeyStore, closeKeys func(), ok bool)

// adminStore is what `slackask keys` and `slackask installs` change beside
// a running serve: the API keys and the installations.
type adminStore interface {
	store.KeyStore
	store.InstallStore
}

// openKeys opens the key and installation tables of the database dsn; on
// SQLite without the lock a running serve holds (sqlite.OpenKeys).
func openKeys(ctx context.Context, dsn string) (adminStore, func(), error) {
	if postgres.IsURL(dsn) {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			return nil, nil, fmt.Errorf("SLACKASK_DATABASE: %w", err)
		}
		return st, func() { _ = st.Close() }, nil
	}
	k, err := sqlite.OpenKeys(ctx, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("SLACKASK_DATABASE %s: %w", dsn, err)
	}
	return k, func() { _ = k.Close() }, nil
}

// listFlag collects a flag given several times, each possibly a
// comma-separated list.
type listFlag []string

func (l *listFlag) String() string { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

func keysCreate(ctx context.Context, open keysOpener, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys create", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), keysUsage+"\nflags of create:\n")
		printFlags(fs.Output(), fs)
	}
	var (
		name                             = fs.String("name", "", "the key's `NAME` (unique)")
		workspaces, channels, responders listFlag
	)
	fs.Var(&workspaces, "workspace", "a team (T…) or Grid organization (E…) `ID` it may ask in (repeatable, or comma-separated)")
	fs.Var(&channels, "channels", "conversation ids it may post in, and user ids it may DM (comma-separated `IDS`)")
	fs.Var(&responders, "responders", "user and user-group ids it may ask (comma-separated `IDS`)")
	if err := parseFlags(fs, args, stdout); err != nil {
		return flagFailed(stderr, "keys create", err)
	}
	key, rec, err := apikeys.New(*name, apikeys.Scope{Workspaces: workspaces, Channels: channels, Responders: responders}, time.Now())
	if err != nil {
		fmt.Fprintf(stderr, "slackask keys create: %v\n", err)
		return 2
	}
	ks, closeKeys, ok := open()
	if !ok {
		return 1
	}
	defer closeKeys()
	if err := ks.CreateKey(ctx, rec); err != nil {
		if errors.Is(err, store.ErrKeyExists) {
			fmt.Fprintf(stderr, "slackask keys create: a key named %q exists already\n", rec.Name)
			return 1
		}
		fmt.Fprintf(stderr, "slackask keys create: %v\n", err)
		return 1
	}
	fmt.Fprintf(stderr, "created key %s (%s): %s\nit is shown only now; store it as a secret\n", rec.ID, rec.Name, describeScope(rec))
	fmt.Fprintln(stdout, key)
	return 0
}

func describeScope(k store.APIKey) string {
	or := func(l []string) string {
		if len(l) == 0 {
			return "any"
		}
		return strings.Join(l, ",")
	}
	return fmt.Sprintf("workspaces %s, channels %s, responders %s", or(k.Workspaces), or(k.Channels), or(k.Responders))
}

func keysList(ctx context.Context, open keysOpener, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keys list", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), keysUsage+"\nflags of list:\n")
		printFlags(fs.Output(), fs)
	}
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parseFlags(fs, args, stdout); err != nil {
		return flagFailed(stderr, "keys list", err)
	}
	ks, closeKeys, ok := open()
	if !ok {
		return 1
	}
	defer closeKeys()
	keys, err := ks.Keys(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "slackask keys list: %v\n", err)
		return 1
	}
	if *asJSON {
		if keys == nil {
			keys = []store.APIKey{}
		}
		b, _ := json.MarshalIndent(keys, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return 0
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tCREATED\tREVOKED\tSCOPE")
	for _, k := range keys {
		revoked := "-"
		if !k.RevokedAt.IsZero() {
			revoked = k.RevokedAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, k.CreatedAt.Format(time.RFC3339), revoked, describeScope(k))
	}
	_ = tw.Flush()
	return 0
}

// serverTokenOnly serves h to the all-powerful caller only: a scoped API
// key gets 403 FORBIDDEN (e.g. /metrics counts every key's asks).
func serverTokenOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if interaction.CallerFrom(r.Context()) != nil {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(http.StatusForbidden)
			b, _ := json.Marshal(map[string]any{"error": interaction.Errorf(interaction.Forbidden, "an API key may not read this; use SLACKASK_API_TOKEN")})
			_, _ = w.Write(append(b, '\n'))
			return
		}
		h.ServeHTTP(w, r)
	})
}
