package installs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/internal/backoff"
	"github.com/slackask/slackask/store"
)

// DefaultRefreshBefore is how long before its expiry a rotating token is
// refreshed. Slack's rotating tokens live 12 hours; a few minutes' margin
// covers a call that takes the token just before it runs out.
const DefaultRefreshBefore = 5 * time.Minute

// Token is a refreshed bot token, as oauth.v2.access grant_type=
// refresh_token answers it.
type Token struct {
	BotToken     string
	RefreshToken string
	ExpiresAt    time.Time
}

// Refresher renews a rotating token.
type Refresher interface {
	Refresh(ctx context.Context, refreshToken string) (Token, error)
}

// SlackRefresher renews tokens with Slack's oauth.v2.access
// (grant_type=refresh_token) through slack-go.
type SlackRefresher struct {
	ClientID, ClientSecret string
	// APIURL is the Web API base ending in "/" (slack.APIURL when empty).
	APIURL string
	// HTTP is the client (http.DefaultClient when nil).
	HTTP *http.Client
	// Now stamps the expiry (time.Now when nil).
	Now func() time.Time
}

// Refresh implements Refresher. Its errors carry Slack's error code, never
// a token.
func (r SlackRefresher) Refresh(ctx context.Context, refreshToken string) (Token, error) {
	hc, base, now := r.HTTP, r.APIURL, r.Now
	if hc == nil {
		hc = http.DefaultClient
	}
	if base == "" {
		base = slack.APIURL
	}
	if now == nil {
		now = time.Now
	}
	resp, err := slack.RefreshOAuthV2TokenContext(ctx, hc, r.ClientID, r.ClientSecret, refreshToken, slack.OAuthOptionAPIURL(base))
	if err != nil {
		return Token{}, interaction.Errorf(interaction.SlackError, "oauth.v2.access (refresh): %s", scrub(err.Error(), refreshToken, r.ClientSecret))
	}
	if resp.AccessToken == "" || resp.RefreshToken == "" {
		return Token{}, interaction.Errorf(interaction.SlackError, "oauth.v2.access (refresh): no token in the answer")
	}
	t := Token{BotToken: resp.AccessToken, RefreshToken: resp.RefreshToken}
	if resp.ExpiresIn > 0 {
		t.ExpiresAt = now().Add(time.Duration(resp.ExpiresIn) * time.Second).UTC()
	}
	return t, nil
}

// scrub removes secrets from a message, in case a transport echoes a
// request (slack-go's errors do not; this keeps it so).
func scrub(msg string, secrets ...string) string {
	for _, s := range secrets {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return msg
}

// Stored is the Source of OAuth installs: installations kept in a store,
// their tokens sealed, a rotating token refreshed before it expires.
//
// At most one refresh of an installation runs at a time in a process
// (others wait for it and read its result); across processes the store's
// compare-and-set decides: a replica that loses the swap reads the
// winner's token instead of writing its own over it.
type Stored struct {
	store  store.InstallStore
	sealer *Sealer
	cfg    StoredConfig

	mu    sync.Mutex
	locks map[string]chan struct{} // per installation key: held by the refresher
	// learned is when every org-wide install's teams were last asked of
	// Slack (under the lock learnLock)
	learned time.Time
}

// learnLock is the lock key of relearning teams (no installation key
// starts with a space).
const learnLock = " teams"

// StoredConfig configures a Stored.
type StoredConfig struct {
	// Refresher renews rotating tokens; nil: expiring tokens are not
	// refreshed (Lookup fails once one has expired).
	Refresher Refresher
	// RefreshBefore: DefaultRefreshBefore when zero.
	RefreshBefore time.Duration
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// Log gets refresh failures (never a token); nil: none.
	Log *zerolog.Logger
	// Teams lists the workspaces an org-wide token serves (Slack's
	// auth.teams.list), so that a team of an Enterprise Grid org is
	// found by its own id (T…); nil: an org-wide install is found by its
	// enterprise only.
	Teams TeamLister
	// RelearnEvery bounds how often a lookup of an unknown team asks
	// Slack again for every org-wide install's teams
	// (DefaultRelearnEvery when zero).
	RelearnEvery time.Duration
}

// DefaultRelearnEvery: an unknown team asks Slack at most once a minute
// per process which teams the org-wide installs serve (auth.teams.list is
// Tier 2, about 20 calls a minute per org).
const DefaultRelearnEvery = time.Minute

// TeamLister lists the workspaces (T…) a token serves: for an org-wide
// install's token, the workspaces of its organization the app was added
// to.
type TeamLister interface {
	Teams(ctx context.Context, token string) ([]string, error)
}

// SlackTeams lists teams with Slack's auth.teams.list through slack-go,
// every page of it.
type SlackTeams struct {
	// APIURL is the Web API base ending in "/" (slack.APIURL when empty).
	APIURL string
	// HTTP is the client (http.DefaultClient when nil).
	HTTP *http.Client
}

// Teams implements TeamLister. Its errors carry Slack's error code, never
// the token.
func (l SlackTeams) Teams(ctx context.Context, token string) ([]string, error) {
	opts := []slack.Option{}
	if l.APIURL != "" {
		opts = append(opts, slack.OptionAPIURL(l.APIURL))
	}
	if l.HTTP != nil {
		opts = append(opts, slack.OptionHTTPClient(l.HTTP))
	}
	api := slack.New(token, opts...)
	var out []string
	cursor := ""
	for page := 0; page < 100; page++ {
		teams, next, err := api.ListTeamsContext(ctx, slack.ListTeamsParameters{Limit: 1000, Cursor: cursor})
		if err != nil {
			return nil, interaction.Errorf(interaction.SlackError, "auth.teams.list: %s", scrub(err.Error(), token))
		}
		for _, t := range teams {
			out = append(out, t.ID)
		}
		if next == "" {
			return out, nil
		}
		cursor = next
	}
	return nil, interaction.Errorf(interaction.SlackError, "auth.teams.list: more than 100 pages")
}

var (
	_ Source  = (*Stored)(nil)
	_ Remover = (*Stored)(nil)
)

// NewStored returns the Source over st, sealing with sealer.
func NewStored(st store.InstallStore, sealer *Sealer, cfg StoredConfig) *Stored {
	if cfg.RefreshBefore <= 0 {
		cfg.RefreshBefore = DefaultRefreshBefore
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.RelearnEvery <= 0 {
		cfg.RelearnEvery = DefaultRelearnEvery
	}
	return &Stored{store: st, sealer: sealer, cfg: cfg, locks: map[string]chan struct{}{}}
}

func (s *Stored) row(in Installation, version int64) (store.InstallRow, error) {
	plain, err := json.Marshal(in)
	if err != nil {
		return store.InstallRow{}, interaction.Errorf(interaction.Internal, "encode installation %q: %v", in.Key(), err)
	}
	return store.InstallRow{
		Key: in.Key(), Enterprise: in.Enterprise, Team: in.Team, OrgWide: in.OrgWide, Version: version,
		Sealed: s.sealer.Seal(plain, in.Key()), ExpiresAt: in.ExpiresAt.UTC(), UpdatedAt: s.cfg.Now().UTC(),
	}, nil
}

func (s *Stored) open(r store.InstallRow) (Installation, bool, error) {
	plain, stale, err := s.sealer.Open(r.Sealed, r.Key)
	if err != nil {
		return Installation{}, false, err
	}
	var in Installation
	if err := json.Unmarshal(plain, &in); err != nil {
		return Installation{}, false, interaction.Errorf(interaction.Internal, "installation %q: corrupt: %v", r.Key, err)
	}
	if in.Key() != r.Key {
		return Installation{}, false, interaction.Errorf(interaction.Internal, "installation %q: its sealed part is for %q", r.Key, in.Key())
	}
	return in, stale, nil
}

// Save stores in (a new install or a reinstall), its tokens sealed.
func (s *Stored) Save(ctx context.Context, in Installation) error {
	op := fmt.Sprintf("installs save %q", in.Key())
	if in.Key() == "" || in.BotToken == "" {
		return fmt.Errorf("%s: %w", op, interaction.Errorf(interaction.InvalidRequest, "an installation needs a team (or an enterprise) and a bot token"))
	}
	r, err := s.row(in, 0)
	if err == nil {
		_, err = s.store.SaveInstall(ctx, r)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if in.OrgWide && s.cfg.Teams != nil {
		// Slack adds an org-wide app to no workspace at install; an admin
		// adds it later (team_access_granted), and an unknown team asks
		// again. A failure here is not the install's.
		if err := s.learn(ctx, in); err != nil && s.cfg.Log != nil {
			s.cfg.Log.Warn().Err(err).Str("installation", in.Key()).Msg("could not list the workspaces of the org-wide install; asked again when one is named")
		}
	}
	return nil
}

// Learn asks Slack which workspaces the org-wide install of enterprise
// serves and records them (team_access_granted, team_access_revoked).
func (s *Stored) Learn(ctx context.Context, enterprise string) error {
	op := fmt.Sprintf("installs learn teams of %q", enterprise)
	if s.cfg.Teams == nil {
		return nil
	}
	in, err := s.Lookup(ctx, enterprise, "")
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := s.learn(ctx, in); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	return nil
}

// learn records the teams the org-wide installation in serves.
func (s *Stored) learn(ctx context.Context, in Installation) error {
	teams, err := s.cfg.Teams.Teams(ctx, in.BotToken)
	if err != nil {
		return err
	}
	return s.store.SetInstallTeams(ctx, in.Enterprise, teams)
}

// relearn asks Slack again for the teams of every org-wide install, at
// most once per RelearnEvery in the process, and reports whether it did.
func (s *Stored) relearn(ctx context.Context) bool {
	unlock, err := s.lock(ctx, learnLock)
	if err != nil {
		return false
	}
	defer unlock()
	now := s.cfg.Now()
	if !s.learned.IsZero() && now.Sub(s.learned) < s.cfg.RelearnEvery {
		return false
	}
	s.learned = now
	rows, err := s.store.Installs(ctx)
	if err != nil {
		return false
	}
	for _, r := range rows {
		if !r.OrgWide {
			continue
		}
		in, err := s.Lookup(ctx, r.Enterprise, "")
		if err == nil {
			err = s.learn(ctx, in)
		}
		if err != nil && s.cfg.Log != nil {
			s.cfg.Log.Warn().Err(err).Str("installation", r.Key).Msg("could not list the workspaces of the org-wide install")
		}
	}
	return true
}

// Teams returns the workspaces recorded for the org-wide install of
// enterprise (as auth.teams.list last named them), sorted.
func (s *Stored) Teams(ctx context.Context, enterprise string) ([]string, error) {
	teams, err := s.store.InstallTeams(ctx, enterprise)
	if err != nil {
		return nil, fmt.Errorf("installs teams of %q: %w", enterprise, err)
	}
	return teams, nil
}

// Lookup implements Source: the installation serving team of enterprise,
// its token refreshed first when it rotates and expires within
// RefreshBefore.
func (s *Stored) Lookup(ctx context.Context, enterprise, team string) (Installation, error) {
	op := fmt.Sprintf("installs lookup %q/%q", enterprise, team)
	r, err := s.store.InstallFor(ctx, enterprise, team)
	if errors.Is(err, store.ErrNoInstall) && enterprise == "" && team != "" && s.cfg.Teams != nil && s.relearn(ctx) {
		// A team named alone may be one an org-wide install was added
		// to since its teams were last listed.
		r, err = s.store.InstallFor(ctx, enterprise, team)
	}
	if errors.Is(err, store.ErrNoInstall) {
		return Installation{}, fmt.Errorf("%s: %w", op, ErrNotInstalled)
	}
	if err != nil {
		return Installation{}, fmt.Errorf("%s: %w", op, err)
	}
	in, _, err := s.open(r)
	if err != nil {
		return Installation{}, fmt.Errorf("%s: %w", op, err)
	}
	if !s.due(in) {
		return in, nil
	}
	in, err = s.refresh(ctx, r.Key)
	if err != nil {
		return Installation{}, fmt.Errorf("%s: %w", op, err)
	}
	return in, nil
}

func (s *Stored) due(in Installation) bool {
	return in.RefreshToken != "" && !in.ExpiresAt.IsZero() && !s.cfg.Now().Add(s.cfg.RefreshBefore).Before(in.ExpiresAt)
}

// lock takes the installation's refresh lock, or gives up with ctx.
func (s *Stored) lock(ctx context.Context, key string) (unlock func(), err error) {
	s.mu.Lock()
	ch, ok := s.locks[key]
	if !ok {
		ch = make(chan struct{}, 1)
		s.locks[key] = ch
	}
	s.mu.Unlock()
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// refresh renews the token of the installation key, once: under the
// process's lock of that key it reads the row again (whoever held the lock
// before may have refreshed it), refreshes only if still due, and swaps
// the row; a lost swap means another replica refreshed it, whose row is
// read and used.
func (s *Stored) refresh(ctx context.Context, key string) (Installation, error) {
	unlock, err := s.lock(ctx, key)
	if err != nil {
		return Installation{}, err
	}
	defer unlock()
	for attempt := 0; ; attempt++ {
		r, err := s.rowByKey(ctx, key)
		if err != nil {
			return Installation{}, err
		}
		in, _, err := s.open(r)
		if err != nil {
			return Installation{}, err
		}
		if !s.due(in) {
			return in, nil
		}
		if s.cfg.Refresher == nil {
			return s.keepOrFail(in, interaction.Errorf(interaction.SlackError, "the bot token of %q expires and no refresher is configured (SLACK_CLIENT_ID, SLACK_CLIENT_SECRET)", key))
		}
		tok, err := s.cfg.Refresher.Refresh(ctx, in.RefreshToken)
		if err != nil {
			// Another replica may have used this refresh token a moment
			// ago (Slack rotates it): its row has the new one, or will
			// once its swap lands. Waiting for it here, under the lock,
			// spares this process's other lookups a refresh each.
			if attempt == 0 && s.waitForSwap(ctx, key, r.Version, err) {
				continue
			}
			return s.keepOrFail(in, err)
		}
		in.BotToken, in.RefreshToken, in.ExpiresAt = tok.BotToken, tok.RefreshToken, tok.ExpiresAt
		next, err := s.row(in, r.Version)
		if err != nil {
			return Installation{}, err
		}
		switch _, err := s.store.SwapInstall(ctx, next); {
		case err == nil:
			return in, nil
		case errors.Is(err, store.ErrInstallChanged) && attempt < 3:
			// Another replica wrote first; its token is as good as ours.
			continue
		default:
			return Installation{}, err
		}
	}
}

// swapWaits and swapPause bound how long a refresh Slack refused waits
// for another replica's row: that replica refreshed a moment before and
// is writing it.
const (
	swapWaits = 10
	swapPause = 50 * time.Millisecond
)

// waitForSwap reports whether the row of key moved past version, reading
// it again for a while when Slack refused the refresh token (another
// replica used it); false at once for other errors.
func (s *Stored) waitForSwap(ctx context.Context, key string, version int64, refreshErr error) bool {
	if !strings.Contains(refreshErr.Error(), "invalid_refresh_token") {
		return false
	}
	pause := backoff.Backoff{Min: swapPause, Max: swapPause, Jitter: -1}
	return backoff.Retry{Pause: &pause, Tries: swapWaits}.Do(ctx, func(int) error {
		if again, err := s.rowByKey(ctx, key); err == nil && again.Version != version {
			return nil
		}
		return errRowUnchanged
	}) == nil
}

// errRowUnchanged is waitForSwap's failed attempt: the row is as it was.
var errRowUnchanged = errors.New("installation row unchanged")

// keepOrFail returns in while its token still works, logging why it was
// not refreshed; once it has expired, the error.
func (s *Stored) keepOrFail(in Installation, err error) (Installation, error) {
	if s.cfg.Now().Before(in.ExpiresAt) {
		if s.cfg.Log != nil {
			s.cfg.Log.Warn().Err(err).Str("installation", in.Key()).Time("expires", in.ExpiresAt).Msg("bot token not refreshed; it still works until it expires")
		}
		return in, nil
	}
	return Installation{}, fmt.Errorf("the bot token of %q expired and could not be refreshed: %w", in.Key(), err)
}

// rowByKey reads the row of key: a team's own, or an org-wide one.
func (s *Stored) rowByKey(ctx context.Context, key string) (store.InstallRow, error) {
	r, err := s.store.InstallFor(ctx, "", key)
	if errors.Is(err, store.ErrNoInstall) {
		r, err = s.store.InstallFor(ctx, key, "")
	}
	if err != nil {
		return store.InstallRow{}, err
	}
	if r.Key != key {
		return store.InstallRow{}, ErrNotInstalled
	}
	return r, nil
}

// Remove deletes the team's own installation when team is not "", else
// the org-wide installation of enterprise and the teams recorded for it
// (app_uninstalled, tokens_revoked), and returns the keys removed.
func (s *Stored) Remove(ctx context.Context, enterprise, team string) ([]string, error) {
	gone, err := s.store.DeleteInstalls(ctx, enterprise, team)
	if err != nil {
		return nil, fmt.Errorf("installs remove %q/%q: %w", enterprise, team, err)
	}
	keys := make([]string, len(gone))
	for i, r := range gone {
		keys[i] = r.Key
	}
	return keys, nil
}

// List returns every installation, by key, tokens included: for the
// process only, never to print.
func (s *Stored) List(ctx context.Context) ([]Installation, error) {
	rows, err := s.store.Installs(ctx)
	if err != nil {
		return nil, fmt.Errorf("installs list: %w", err)
	}
	out := make([]Installation, 0, len(rows))
	for _, r := range rows {
		in, _, err := s.open(r)
		if err != nil {
			return nil, fmt.Errorf("installs list: %w", err)
		}
		out = append(out, in)
	}
	return out, nil
}

// Rekey seals again under the current key every installation sealed under
// the previous one, and returns how many it sealed again of how many there
// are. A row another process changes meanwhile is read again.
func (s *Stored) Rekey(ctx context.Context) (resealed, total int, err error) {
	rows, err := s.store.Installs(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("installs rekey: %w", err)
	}
	for _, r := range rows {
		for attempt := 0; ; attempt++ {
			in, stale, err := s.open(r)
			if err != nil {
				return resealed, len(rows), fmt.Errorf("installs rekey: %w", err)
			}
			if !stale {
				break
			}
			next, err := s.row(in, r.Version)
			if err != nil {
				return resealed, len(rows), fmt.Errorf("installs rekey: %w", err)
			}
			_, err = s.store.SwapInstall(ctx, next)
			if err == nil {
				resealed++
				break
			}
			if !errors.Is(err, store.ErrInstallChanged) || attempt >= 3 {
				if errors.Is(err, store.ErrNoInstall) {
					break // uninstalled meanwhile
				}
				return resealed, len(rows), fmt.Errorf("installs rekey: %w", err)
			}
			if r, err = s.rowByKey(ctx, r.Key); err != nil {
				if errors.Is(err, store.ErrNoInstall) || errors.Is(err, ErrNotInstalled) {
					break
				}
				return resealed, len(rows), fmt.Errorf("installs rekey: %w", err)
			}
		}
	}
	return resealed, len(rows), nil
}
