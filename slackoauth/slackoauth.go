// Package slackoauth installs slackask in Slack workspaces with OAuth v2:
// GET /slack/install sends the person to Slack's authorize page with a
// signed, single-use, 10-minute state (and PKCE when the app has it on);
// GET /slack/oauth_redirect checks the state, exchanges the code with
// oauth.v2.access and stores the installation (a team's, or an Enterprise
// Grid organization's for an org-wide install) through installs.Stored,
// then shows what to do next.
//
// Nothing it logs or shows holds a token, a code or the client secret.
package slackoauth

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/slack-go/slack"

	"github.com/slackask/slackask/installs"
	"github.com/slackask/slackask/interaction"
	"github.com/slackask/slackask/store"
)

// DefaultAuthorizeURL is Slack's authorize page.
const DefaultAuthorizeURL = "https://slack.com/oauth/v2/authorize"

// The paths the handlers serve.
const (
	InstallPath  = "/slack/install"
	RedirectPath = "/slack/oauth_redirect"
)

const cookieName = "slackask_oauth"

// Saver keeps an installation (installs.Stored).
type Saver interface {
	Save(ctx context.Context, in installs.Installation) error
}

// Nonces records used state nonces (every store.Store).
type Nonces interface {
	UseNonce(ctx context.Context, nonce string, expires time.Time) error
}

// Config configures the handlers.
type Config struct {
	ClientID, ClientSecret string
	// Scopes are the bot scopes asked for (bot.Scopes).
	Scopes []string
	// RedirectURL is the absolute URL of RedirectPath as Slack reaches it
	// (SLACKASK_PUBLIC_URL + RedirectPath); it must be among the app's
	// redirect URLs.
	RedirectURL string
	// AuthorizeURL is Slack's authorize page (DefaultAuthorizeURL when
	// empty); APIURL the Web API base for oauth.v2.access (slack.APIURL
	// when empty).
	AuthorizeURL, APIURL string
	// PKCE adds code_challenge (S256) to the authorize URL and the
	// code_verifier to the exchange.
	PKCE bool
	// StateKey signs states: at least 32 bytes, the same on every replica
	// (serve takes the store's Secret "slack-oauth-state").
	StateKey []byte
	Nonces   Nonces
	Saver    Saver
	// HTTP is the client for oauth.v2.access and auth.test
	// (http.DefaultClient when nil).
	HTTP *http.Client
	Now  func() time.Time
	Log  zerolog.Logger
}

// Handler serves InstallPath and RedirectPath.
type Handler struct {
	cfg Config
	key stateKey
	// cookiePath is the redirect URL's path as the browser sees it (a
	// proxy may serve slackask under a prefix), where the cookie goes.
	cookiePath string
}

// New checks cfg and returns the handlers.
func New(cfg Config) (*Handler, error) {
	var errs []error
	if cfg.ClientID == "" || cfg.ClientSecret == "" {
		errs = append(errs, errors.New("a client id and secret are required"))
	}
	if len(cfg.StateKey) < 32 {
		errs = append(errs, errors.New("the state key is shorter than 32 bytes"))
	}
	cookiePath := RedirectPath
	if u, err := url.Parse(cfg.RedirectURL); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		errs = append(errs, errors.New("the redirect URL is not an absolute http(s) URL"))
	} else if u.Path != "" {
		cookiePath = u.Path
	}
	if cfg.AuthorizeURL == "" {
		cfg.AuthorizeURL = DefaultAuthorizeURL
	}
	if _, err := url.Parse(cfg.AuthorizeURL); err != nil {
		errs = append(errs, errors.New("the authorize URL does not parse"))
	}
	if cfg.Nonces == nil || cfg.Saver == nil {
		errs = append(errs, errors.New("a nonce store and a saver are required"))
	}
	if len(cfg.Scopes) == 0 {
		errs = append(errs, errors.New("no bot scopes"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("slackoauth: %w", interaction.Errorf(interaction.InvalidRequest, "%v", err))
	}
	if cfg.APIURL == "" {
		cfg.APIURL = slack.APIURL
	}
	if cfg.HTTP == nil {
		cfg.HTTP = http.DefaultClient
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg, key: stateKey(cfg.StateKey), cookiePath: cookiePath}, nil
}

// Mount registers both handlers at their paths with mount (an exact path,
// as httpapi.Server.MountPublic takes): they answer GET only (a HEAD of
// the redirect, from a link checker, must not spend the state), other
// methods 405.
func (h *Handler) Mount(mount func(path string, handler http.Handler)) {
	mount(InstallPath, onlyGet(h.Install))
	mount(RedirectPath, onlyGet(h.Redirect))
}

func onlyGet(f http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", "GET")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		f(w, r)
	})
}

// Install redirects to Slack's authorize page with a fresh state, and sets
// the cookie that ties the state to this browser.
func (h *Handler) Install(w http.ResponseWriter, r *http.Request) {
	now := h.cfg.Now()
	s, st := h.key.newState(h.cfg.RedirectURL, now.Add(StateTTL))
	q := url.Values{
		"client_id":    {h.cfg.ClientID},
		"scope":        {strings.Join(h.cfg.Scopes, ",")},
		"redirect_uri": {h.cfg.RedirectURL},
		"state":        {s},
	}
	if h.cfg.PKCE {
		q.Set("code_challenge", challenge(h.key.verifier(st)))
		q.Set("code_challenge_method", "S256")
	}
	u, _ := url.Parse(h.cfg.AuthorizeURL) // checked by New
	u.RawQuery = q.Encode()
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: h.key.browserTag(st), Path: h.cookiePath, MaxAge: int(StateTTL / time.Second),
		HttpOnly: true, Secure: strings.HasPrefix(h.cfg.RedirectURL, "https://"), SameSite: http.SameSiteLaxMode,
	})
	w.Header().Set("Cache-Control", "no-store")
	http.Redirect(w, r, u.String(), http.StatusFound)
}

// Redirect is where Slack sends the person back: it verifies the state,
// exchanges the code and stores the installation.
func (h *Handler) Redirect(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	q := r.URL.Query()
	log := h.cfg.Log.With().Str("component", "slack-oauth").Logger()
	if e := q.Get("error"); e != "" {
		if e == "access_denied" {
			log.Info().Msg("install cancelled on Slack's page")
			writePage(w, http.StatusOK, page{Title: "Installation cancelled", Lines: []string{
				"You cancelled the installation on Slack's page: nothing was installed.",
				"To install slackask after all, open the install link again.",
			}})
			return
		}
		log.Warn().Str("error", clip(e)).Msg("Slack sent back an error instead of a code")
		h.fail(w, http.StatusBadRequest, interaction.Errorf(interaction.SlackError, "Slack did not authorize the installation (%s)", clip(e)))
		return
	}
	st, err := h.key.verify(q.Get("state"), h.cfg.RedirectURL, h.cfg.Now())
	if err == nil {
		var c string
		if ck, cerr := r.Cookie(cookieName); cerr == nil {
			c = ck.Value
		}
		err = h.key.checkBrowser(st, c)
	}
	if err != nil {
		log.Warn().Str("reason", err.Error()).Msg("install redirect refused")
		h.fail(w, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "%v: start again from the install link", err))
		return
	}
	code := q.Get("code")
	if code == "" || len(code) > 512 {
		h.fail(w, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "the link has no code from Slack: start again from the install link"))
		return
	}
	// The nonce is spent before the exchange: a reused state never
	// reaches Slack, also when two replicas get it at once.
	if err := h.cfg.Nonces.UseNonce(r.Context(), fmt.Sprintf("%x", st.nonce), st.expires); err != nil {
		if errors.Is(err, store.ErrNonceUsed) {
			log.Warn().Msg("install redirect refused: its state was used before")
			h.fail(w, http.StatusBadRequest, interaction.Errorf(interaction.InvalidRequest, "this install link was used already: start again from the install link"))
			return
		}
		log.Error().Err(err).Msg("install redirect: recording the state")
		h.fail(w, http.StatusInternalServerError, interaction.Errorf(interaction.Internal, "slackask could not record the install: try again"))
		return
	}
	in, name, err := h.exchange(r.Context(), code, st)
	if err != nil {
		log.Warn().Err(err).Msg("install: the code exchange failed")
		h.fail(w, http.StatusBadGateway, err)
		return
	}
	if err := h.cfg.Saver.Save(r.Context(), in); err != nil {
		log.Error().Err(err).Str("installation", in.Key()).Msg("install: storing the installation")
		h.fail(w, http.StatusInternalServerError, interaction.Errorf(interaction.Internal, "slackask could not store the installation: try again"))
		return
	}
	log.Info().Str("installation", in.Key()).Str("enterprise", in.Enterprise).Str("team", in.Team).Bool("org_wide", in.OrgWide).
		Str("installed_by", in.InstalledBy).Bool("rotating", in.RefreshToken != "").Msg("installed")
	writePage(w, http.StatusOK, donePage(in, name))
}

// exchange turns the code into an installation (oauth.v2.access, then
// auth.test for the bot id) and the name of its team or organization.
func (h *Handler) exchange(ctx context.Context, code string, st state) (installs.Installation, string, error) {
	opts := []slack.OAuthOption{slack.OAuthOptionAPIURL(h.cfg.APIURL)}
	if h.cfg.PKCE {
		opts = append(opts, slack.OAuthOptionCodeVerifier(h.key.verifier(st)))
	}
	resp, err := slack.GetOAuthV2ResponseContext(ctx, h.cfg.HTTP, h.cfg.ClientID, h.cfg.ClientSecret, code, h.cfg.RedirectURL, opts...)
	if err != nil {
		return installs.Installation{}, "", interaction.Errorf(interaction.SlackError, "Slack refused the installation: %s", h.scrub(err.Error(), code))
	}
	switch {
	case resp.AccessToken == "" || resp.TokenType != "bot":
		return installs.Installation{}, "", interaction.Errorf(interaction.SlackError, "Slack's answer has no bot token (token_type %q)", clip(resp.TokenType))
	case resp.IsEnterpriseInstall && !isID(resp.Enterprise.ID, 'E'):
		return installs.Installation{}, "", interaction.Errorf(interaction.SlackError, "Slack's answer for an org-wide install names no enterprise")
	case !resp.IsEnterpriseInstall && !isID(resp.Team.ID, 'T'):
		return installs.Installation{}, "", interaction.Errorf(interaction.SlackError, "Slack's answer names no team")
	case resp.Enterprise.ID != "" && !isID(resp.Enterprise.ID, 'E'):
		return installs.Installation{}, "", interaction.Errorf(interaction.SlackError, "Slack's answer names an enterprise that is not one")
	}
	now := h.cfg.Now().UTC()
	in := installs.Installation{
		Enterprise: resp.Enterprise.ID, OrgWide: resp.IsEnterpriseInstall,
		AppID: resp.AppID, BotUserID: resp.BotUserID, BotToken: resp.AccessToken, RefreshToken: resp.RefreshToken,
		InstalledBy: resp.AuthedUser.ID, InstalledAt: now, Scopes: splitScopes(resp.Scope),
	}
	if !in.OrgWide {
		in.Team = resp.Team.ID
	}
	if resp.ExpiresIn > 0 {
		in.ExpiresAt = now.Add(time.Duration(resp.ExpiresIn) * time.Second)
	}
	// auth.test names the bot (B…), which oauth.v2.access does not.
	api := slack.New(in.BotToken, slack.OptionAPIURL(h.cfg.APIURL), slack.OptionHTTPClient(h.cfg.HTTP))
	if at, err := api.AuthTestContext(ctx); err == nil {
		in.BotID = at.BotID
	} else {
		h.cfg.Log.Warn().Str("error", h.scrub(err.Error(), code, in.BotToken)).Str("installation", in.Key()).Msg("install: auth.test failed; the bot id stays unknown")
	}
	name := resp.Team.Name
	if in.OrgWide {
		name = resp.Enterprise.Name
	}
	return in, clip(name), nil
}

// scrub keeps secrets out of a message (slack-go's errors hold none; this
// keeps it so whatever a transport says).
func (h *Handler) scrub(msg string, more ...string) string {
	for _, s := range append([]string{h.cfg.ClientSecret}, more...) {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	return clip(msg)
}

func (h *Handler) fail(w http.ResponseWriter, status int, err error) {
	var ie *interaction.Error
	msg, code := err.Error(), interaction.ErrorCode(err)
	if errors.As(err, &ie) {
		msg = ie.Message
	}
	writePage(w, status, page{Title: "slackask was not installed", Lines: []string{msg}, Code: string(code)})
}

func isID(id string, prefix byte) bool {
	if len(id) < 2 || len(id) > 32 || id[0] != prefix {
		return false
	}
	for _, c := range id[1:] {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func splitScopes(s string) []string {
	var out []string
	for p := range strings.SplitSeq(s, ",") {
		if p = strings.TrimSpace(p); p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// clip bounds what of an outside string reaches a page or a log line.
func clip(s string) string {
	const max = 200
	if len(s) > max {
		return s[:max] + "…"
	}
	return s
}
