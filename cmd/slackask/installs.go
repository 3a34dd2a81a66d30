package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/installs"
)

const installsUsage = `usage: slackask installs list
       slackask installs rekey

Works on the OAuth installations of the database in SLACKASK_DATABASE,
beside a running serve.

list   prints each installation: its team (or enterprise, for an org-wide
       install, with the workspaces it serves as Slack last listed them),
       whether its token rotates and when it expires, and the id of the
       encryption key it is sealed under. No token is printed.
rekey  seals every installation sealed under SLACKASK_ENCRYPTION_KEY_PREVIOUS
       again under SLACKASK_ENCRYPTION_KEY (both set); once it reports none
       left and every replica runs with the new key, remove the previous one.
       serve does the same at start when the previous key is set.
`

func cmdInstalls(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) != 1 || isHelp(args[0]) {
		fmt.Fprint(stdout, installsUsage)
		if len(args) == 1 {
			return 0
		}
		return 2
	}
	cfg, err := config.Load()
	if err != nil {
		fmt.Fprintf(stderr, "slackask installs: %v\n", err)
		return 2
	}
	switch args[0] {
	case "list", "rekey":
	default:
		fmt.Fprintf(stderr, "slackask installs: unknown subcommand %q\n\n%s", args[0], installsUsage)
		return 2
	}
	var sealer *installs.Sealer
	if cfg.EncryptionKey != "" || args[0] == "rekey" {
		if sealer, err = cfg.Sealer(); err != nil {
			fmt.Fprintf(stderr, "slackask installs: %v\n", err)
			return 2
		}
	}
	if args[0] == "rekey" && cfg.EncryptionKeyPrevious == "" {
		fmt.Fprintf(stderr, "slackask installs rekey: set SLACKASK_ENCRYPTION_KEY_PREVIOUS to the old key (and SLACKASK_ENCRYPTION_KEY to the new one)\n")
		return 2
	}
	st, closeStore, err := openKeys(ctx, cfg.Database)
	if err != nil {
		fmt.Fprintf(stderr, "slackask installs: %v\n", err)
		return 1
	}
	defer closeStore()
	if args[0] == "rekey" {
		n, total, err := installs.NewStored(st, sealer, installs.StoredConfig{}).Rekey(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "slackask installs rekey: %v (%d sealed again before it)\n", err, n)
			return 1
		}
		fmt.Fprintf(stdout, "%d of %d installations sealed again under key %s; none is left under the previous key\n", n, total, sealer.KeyID())
		return 0
	}
	rows, err := st.Installs(ctx)
	if err != nil {
		fmt.Fprintf(stderr, "slackask installs list: %v\n", err)
		return 1
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "INSTALLATION\tENTERPRISE\tTEAM(S)\tORG-WIDE\tTOKEN EXPIRES\tKEY\tUPDATED")
	for _, r := range rows {
		expires := "never (no rotation)"
		if !r.ExpiresAt.IsZero() {
			expires = r.ExpiresAt.Format(time.RFC3339)
		}
		key := installs.SealedKeyID(r.Sealed)
		if sealer != nil {
			if key == sealer.KeyID() {
				key += " (current)"
			} else {
				key += " (not the current key: rekey)"
			}
		}
		team := r.Team
		if r.OrgWide {
			teams, err := st.InstallTeams(ctx, r.Enterprise)
			if err != nil {
				fmt.Fprintf(stderr, "slackask installs list: %v\n", err)
				return 1
			}
			team = strings.Join(teams, ",")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\t%s\t%s\n", r.Key, dash(r.Enterprise), dash(team), r.OrgWide, expires, key, r.UpdatedAt.Format(time.RFC3339))
	}
	if err := tw.Flush(); err != nil {
		return 1
	}
	return 0
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
