package store

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/slackask/slackask/interaction"
)

// InstallRow is one Slack installation as a store keeps it: the ids it is
// found by in the clear, everything else (tokens included) in Sealed, an
// opaque blob package installs seals and opens. A store never sees a token.
type InstallRow struct {
	// Key is the team, or the enterprise of an org-wide install
	// (installs.Installation.Key): unique among rows.
	Key        string
	Enterprise string // E…, "" outside Enterprise Grid
	Team       string // T…, "" for an org-wide install
	OrgWide    bool
	// Version counts the row's writes: 1 when first saved, +1 on every
	// SaveInstall or SwapInstall. SwapInstall compares it.
	Version int64
	// Sealed is the installation, sealed (never empty).
	Sealed []byte
	// ExpiresAt is when its bot token expires (zero: never), in the clear
	// so that a listing can say which tokens rotate without opening them.
	ExpiresAt time.Time
	UpdatedAt time.Time
}

// InstallStore keeps Slack installations and the single-use nonces of
// OAuth states. Every Store is one.
type InstallStore interface {
	// SaveInstall inserts r, or replaces the row with its Key (a
	// reinstall), and returns the row as stored (Version 1, or the old
	// Version+1).
	SaveInstall(ctx context.Context, r InstallRow) (InstallRow, error)
	// InstallFor returns the row serving team of enterprise: the team's
	// own, else the org-wide install of enterprise, else, when enterprise
	// is "", the org-wide install that SetInstallTeams says serves team.
	// Either id may be "". ErrNoInstall when none serves it.
	InstallFor(ctx context.Context, enterprise, team string) (InstallRow, error)
	// SwapInstall replaces the row with r.Key only while its Version is
	// still r.Version (compare-and-set), and returns the row as stored
	// (Version+1). ErrInstallChanged when another write came first,
	// ErrNoInstall when the row is gone.
	SwapInstall(ctx context.Context, r InstallRow) (InstallRow, error)
	// DeleteInstalls removes the team's own row when team is not "", else
	// the org-wide row of enterprise and the teams recorded for it (the
	// org's teams' own installs stay: each is an installation of its
	// own), and returns the rows removed. Both "" removes nothing.
	DeleteInstalls(ctx context.Context, enterprise, team string) ([]InstallRow, error)
	// SetInstallTeams records that the org-wide install of enterprise
	// serves exactly teams (auth.teams.list), replacing what was recorded
	// for it; a team recorded for another enterprise moves to this one.
	SetInstallTeams(ctx context.Context, enterprise string, teams []string) error
	// InstallTeams returns the teams recorded for enterprise, sorted.
	InstallTeams(ctx context.Context, enterprise string) ([]string, error)
	// Installs returns every row, by Key.
	Installs(ctx context.Context) ([]InstallRow, error)
	// UseNonce records nonce as used until expires, once: ErrNonceUsed
	// when it was recorded before (by any process sharing the database)
	// and has not expired. Expired nonces are forgotten.
	UseNonce(ctx context.Context, nonce string, expires time.Time) error
}

var (
	// ErrNoInstall: no installation serves that team or enterprise.
	ErrNoInstall = interaction.Errorf(interaction.NotFound, "slackask is not installed in this workspace")
	// ErrInstallChanged: SwapInstall lost to another write of the row.
	// It is not a caller's error: the loser reads the row again.
	ErrInstallChanged = errors.New("store: the installation changed meanwhile")
	// ErrNonceUsed: UseNonce with a nonce used before.
	ErrNonceUsed = interaction.Errorf(interaction.InvalidRequest, "this install link was used already")
)

// CheckInstall refuses a row SaveInstall or SwapInstall cannot store.
func CheckInstall(r InstallRow) error {
	switch {
	case r.Key == "":
		return errors.New("an installation needs a key")
	case r.OrgWide && (r.Enterprise == "" || r.Key != r.Enterprise):
		return errors.New("an org-wide installation is keyed by its enterprise")
	case !r.OrgWide && (r.Team == "" || r.Key != r.Team):
		return errors.New("a team's installation is keyed by its team")
	case len(r.Sealed) == 0:
		return errors.New("an installation's sealed part is empty")
	}
	return nil
}

// CheckInstallTeams refuses what SetInstallTeams cannot record.
func CheckInstallTeams(enterprise string, teams []string) error {
	if enterprise == "" {
		return errors.New("teams are recorded for an enterprise")
	}
	if slices.Contains(teams, "") {
		return errors.New("a team id is empty")
	}
	return nil
}

// CloneInstall returns a deep copy of r.
func CloneInstall(r InstallRow) InstallRow {
	r.Sealed = slices.Clone(r.Sealed)
	return r
}
