package slackfake

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// OAuth v2 as Slack plays it: the authorize page (where a person approves
// an install), oauth.v2.access (a code exchanged for a bot token, or a
// refresh token for a new one when token rotation is on), and uninstalls.
//
// Codes are single-use and expire after Config.CodeTTL (Slack: 10
// minutes); a code_challenge given to the authorize page (PKCE, S256) must
// be matched by the code_verifier of the exchange. With
// Config.TokenRotation, bot tokens are xoxe.xoxb-1-… and expire after
// Config.TokenTTL (Slack: 12 hours), when every Web API method answers
// token_expired; each refresh token works once.

// Approval is what the person on the authorize page does.
type Approval struct {
	// Team is the workspace installed into (default Config.TeamID).
	Team string
	// User is who approves (default: the team's first person by id, else
	// U0INSTALLER).
	User string
	// OrgWide installs the app for the team's whole Grid enterprise
	// (is_enterprise_install).
	OrgWide bool
	// Deny presses Cancel: the redirect carries error=access_denied.
	Deny bool
}

type oauthCode struct {
	code                   string
	redirectURI            string
	challenge              string // S256 code_challenge, "" without PKCE
	team, enterprise, user string
	orgWide                bool
	scopes                 string
	expires                time.Time
	used                   bool
}

// ErrAuthorize is Approve's error for an authorize URL Slack would show an
// error page for (no redirect).
var ErrAuthorize = errors.New("slackfake: authorize")

// Approve plays a person on the authorize page authorizeURL (the URL an
// app's install link redirects to) and returns where Slack sends the
// browser: redirect_uri with code and state, or with error=access_denied
// and state when a.Deny.
func (s *Server) Approve(authorizeURL string, a Approval) (string, error) {
	u, err := url.Parse(authorizeURL)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrAuthorize, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.approveLocked(u.Query(), a)
}

func (s *Server) approveLocked(q url.Values, a Approval) (string, error) {
	bad := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: "+format, append([]any{ErrAuthorize}, args...)...)
	}
	if q.Get("client_id") != s.cfg.ClientID {
		return bad("invalid_client_id")
	}
	redirect := q.Get("redirect_uri")
	ru, err := url.Parse(redirect)
	switch {
	case redirect == "" || err != nil || (ru.Scheme != "http" && ru.Scheme != "https") || ru.Host == "":
		return bad("bad_redirect_uri: %q", redirect)
	case len(s.cfg.RedirectURLs) > 0 && !slices.ContainsFunc(s.cfg.RedirectURLs, func(p string) bool { return strings.HasPrefix(redirect, p) }):
		return bad("bad_redirect_uri: %q is not among the app's redirect URLs", redirect)
	case q.Get("scope") == "":
		return bad("invalid_scope: no scope requested")
	}
	challenge := q.Get("code_challenge")
	if challenge != "" && q.Get("code_challenge_method") != "S256" {
		return bad("invalid_code_challenge_method: %q", q.Get("code_challenge_method"))
	}
	back := url.Values{}
	if st := q.Get("state"); st != "" {
		back.Set("state", st)
	}
	if a.Deny {
		back.Set("error", "access_denied")
		return withQuery(ru, back), nil
	}
	team := s.tm.teams[s.teamIDLocked(a.Team)]
	if team == nil {
		return bad("unknown team %q", a.Team)
	}
	if a.OrgWide && team.enterprise == "" {
		return bad("team %s is not in an Enterprise Grid org", team.id)
	}
	installer := a.User
	if installer == "" {
		installer = "U0INSTALLER"
		var ids []string
		for id, u := range s.ws.users {
			if !u.IsBot && s.teamIDLocked(u.Team) == team.id {
				ids = append(ids, id)
			}
		}
		if len(ids) > 0 {
			installer = slices.Min(ids)
		}
	}
	c := &oauthCode{
		code: randID(strings.TrimPrefix(team.id, "T")+".", 24), redirectURI: redirect, challenge: challenge,
		team: team.id, enterprise: team.enterprise, user: installer, orgWide: a.OrgWide,
		scopes: q.Get("scope"), expires: s.now().Add(s.cfg.CodeTTL),
	}
	s.tm.codes[c.code] = c
	back.Set("code", c.code)
	return withQuery(ru, back), nil
}

func withQuery(u *url.URL, add url.Values) string {
	q := u.Query()
	for k, v := range add {
		q[k] = v
	}
	out := *u
	out.RawQuery = q.Encode()
	return out.String()
}

// serveAuthorize is GET /oauth/v2/authorize: it approves at once and
// redirects (302), as a person who clicks Allow. Slack's team parameter
// picks the workspace; fake_org_wide=1, fake_deny=1 and fake_user=U… are
// the fake's own, for a test that drives it with a browser.
func (s *Server) serveAuthorize(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	a := Approval{Team: q.Get("team"), User: q.Get("fake_user"), OrgWide: q.Get("fake_org_wide") == "1", Deny: q.Get("fake_deny") == "1"}
	s.mu.Lock()
	to, err := s.approveLocked(q, a)
	s.mu.Unlock()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	http.Redirect(w, r, to, http.StatusFound)
}

// oauthV2Access is oauth.v2.access: grant_type authorization_code (the
// default) or refresh_token.
func (s *Server) oauthV2Access(r *apiRequest) reply {
	id, secret := r.str("client_id"), r.str("client_secret")
	if r.basicUser != "" {
		id, secret = r.basicUser, r.basicPass
	}
	switch {
	case id == "":
		return errReply("invalid_client_id")
	case id != s.cfg.ClientID:
		return errReply("invalid_client_id")
	case subtle.ConstantTimeCompare([]byte(secret), []byte(s.cfg.ClientSecret)) != 1:
		return errReply("bad_client_secret")
	}
	switch r.str("grant_type") {
	case "", "authorization_code":
		return s.exchangeCode(r)
	case "refresh_token":
		return s.refreshToken(r)
	default:
		return errReply("invalid_grant_type")
	}
}

func (s *Server) exchangeCode(r *apiRequest) reply {
	c := s.tm.codes[r.str("code")]
	if c == nil || c.used || !s.now().Before(c.expires) {
		return errReply("invalid_code")
	}
	// A code is spent by its first exchange, whatever comes of it: a
	// replayed code never gives a token.
	c.used = true
	if r.has("redirect_uri") && r.str("redirect_uri") != c.redirectURI || !r.has("redirect_uri") && c.redirectURI != "" {
		return errReply("bad_redirect_uri")
	}
	if c.challenge != "" {
		sum := sha256.Sum256([]byte(r.str("code_verifier")))
		if r.str("code_verifier") == "" || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			return errReply("invalid_grant")
		}
	}
	t := s.tm.teams[c.team]
	g := &grant{team: c.team, enterprise: c.enterprise, orgWide: c.orgWide, botUser: t.botUser, scopes: c.scopes}
	if c.orgWide {
		g.team = ""
	}
	s.issueLocked(g)
	out := map[string]any{
		"access_token": g.token, "token_type": "bot", "scope": c.scopes,
		"bot_user_id": g.botUser, "app_id": s.cfg.AppID,
		"team":                  map[string]any{"id": t.id, "name": t.name},
		"enterprise":            s.wireEnterprise(t),
		"is_enterprise_install": c.orgWide,
		"authed_user":           map[string]any{"id": c.user},
	}
	if c.orgWide {
		out["team"] = nil // an org-wide install is the enterprise's, not a team's
	}
	if g.refresh != "" {
		out["refresh_token"], out["expires_in"] = g.refresh, int(s.cfg.TokenTTL/time.Second)
	}
	return okReply(out)
}

// issueLocked gives g a new bot token (and, with rotation, a refresh
// token and an expiry) and records it.
func (s *Server) issueLocked(g *grant) {
	if s.cfg.TokenRotation {
		g.token = "xoxe.xoxb-1-" + randHex(24)
		g.refresh = "xoxe-1-" + randHex(24)
		g.expires = s.now().Add(s.cfg.TokenTTL).Unix()
		s.tm.refresh[g.refresh] = g
	} else {
		g.token = "xoxb-" + strings.TrimPrefix(g.team+g.enterprise, "T") + "-" + randHex(24)
	}
	s.tm.grants[g.token] = g
}

func (s *Server) refreshToken(r *apiRequest) reply {
	old := s.tm.refresh[r.str("refresh_token")]
	if old == nil || old.revoked {
		return errReply("invalid_refresh_token")
	}
	delete(s.tm.refresh, old.refresh)
	// The old bot token keeps working until it expires; the new one is a
	// grant of its own for the same installation.
	g := &grant{team: old.team, enterprise: old.enterprise, orgWide: old.orgWide, botUser: old.botUser, scopes: old.scopes, away: maps.Clone(old.away)}
	s.issueLocked(g)
	out := map[string]any{
		"access_token": g.token, "token_type": "bot", "scope": g.scopes,
		"bot_user_id": g.botUser, "app_id": s.cfg.AppID,
		"refresh_token": g.refresh, "expires_in": int(s.cfg.TokenTTL / time.Second),
		"is_enterprise_install": g.orgWide,
	}
	if t := s.tm.teams[g.team]; t != nil {
		out["team"] = map[string]any{"id": t.id, "name": t.name}
	}
	if e := s.tm.enterprises[g.enterprise]; e != nil {
		out["enterprise"] = map[string]any{"id": e.id, "name": e.name}
	} else {
		out["enterprise"] = nil
	}
	return okReply(out)
}

// Uninstall removes the app from team (or, with team "", the org-wide
// install of enterprise): its tokens are revoked (token_revoked from then
// on) and app_uninstalled is delivered to the events URL, as Slack does.
// It returns the event's answer status.
func (s *Server) Uninstall(ctx context.Context, enterprise, team string) (int, error) {
	s.revoke(enterprise, team)
	return s.DeliverEvent(ctx, team, enterprise, map[string]any{"type": "app_uninstalled", "event_ts": strconv.FormatInt(s.now().Unix(), 10)})
}

// RevokeTokens revokes the bot tokens of team (or of enterprise's
// org-wide install, team "") and delivers tokens_revoked naming its bot
// user.
func (s *Server) RevokeTokens(ctx context.Context, enterprise, team string) (int, error) {
	bots := s.revoke(enterprise, team)
	return s.DeliverEvent(ctx, team, enterprise, map[string]any{
		"type": "tokens_revoked", "tokens": map[string]any{"oauth": []string{}, "bot": bots},
		"event_ts": strconv.FormatInt(s.now().Unix(), 10),
	})
}

// SetTeamAccess adds the org-wide install of enterprise to team (granted)
// or removes it from team, as an org admin does, and delivers
// team_access_granted or team_access_revoked (team_ids: [team]) to the
// events URL: the token then reaches team, or no longer does.
func (s *Server) SetTeamAccess(ctx context.Context, enterprise, team string, granted bool) (int, error) {
	s.mu.Lock()
	for _, g := range s.tm.grants {
		if !g.orgWide || g.enterprise != enterprise || g.revoked {
			continue
		}
		if g.away == nil {
			g.away = map[string]bool{}
		}
		if granted {
			delete(g.away, team)
		} else {
			g.away[team] = true
		}
	}
	s.mu.Unlock()
	typ := "team_access_revoked"
	if granted {
		typ = "team_access_granted"
	}
	return s.DeliverEvent(ctx, "", enterprise, map[string]any{"type": typ, "team_ids": []string{team}})
}

func (s *Server) revoke(enterprise, team string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var bots []string
	for _, g := range s.tm.grants {
		if g.revoked || (team != "" && (g.orgWide || g.team != team)) || (team == "" && !(g.orgWide && g.enterprise == enterprise)) {
			continue
		}
		g.revoked = true
		delete(s.tm.refresh, g.refresh)
		if !slices.Contains(bots, g.botUser) {
			bots = append(bots, g.botUser)
		}
	}
	slices.Sort(bots)
	return bots
}

// TokenValid reports whether a bot token works now (issued, not revoked,
// not expired).
func (s *Server) TokenValid(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, code := s.checkToken(token, botToken)
	return g != nil && code == ""
}
