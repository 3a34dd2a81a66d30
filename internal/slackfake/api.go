package slackfake

import (
	"encoding/json"
	"io"
	"maps"
	"math"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/slackask/slackask/internal/clock"
)

// Call is one Web API request as the fake received it.
type Call struct {
	// Method is the API method, e.g. "chat.postMessage".
	Method string
	// Params holds every parameter but the token; JSON values that are not
	// strings (a view object, a number) are kept as their JSON text.
	Params map[string]string
	// At is the request time by Config.Now.
	At time.Time
	// Error is the error code answered, "" when the call succeeded.
	Error string
}

type tokenKind int

const (
	botToken tokenKind = iota
	appToken
	anyToken
	// noToken: the method authenticates otherwise (oauth.v2.access: the
	// client id and secret)
	noToken
)

type apiMethod struct {
	token   tokenKind
	handler func(s *Server, r *apiRequest) reply
}

var apiMethods = map[string]apiMethod{
	"auth.test":             {anyToken, (*Server).authTest},
	"auth.teams.list":       {botToken, (*Server).authTeamsList},
	"apps.connections.open": {appToken, (*Server).appsConnectionsOpen},
	"chat.postMessage":      {botToken, (*Server).chatPostMessage},
	"chat.update":           {botToken, (*Server).chatUpdate},
	"chat.postEphemeral":    {botToken, (*Server).chatPostEphemeral},
	"chat.getPermalink":     {botToken, (*Server).chatGetPermalink},
	"conversations.info":    {botToken, (*Server).conversationsInfo},
	"conversations.open":    {botToken, (*Server).conversationsOpen},
	"conversations.history": {botToken, (*Server).conversationsHistory},
	"conversations.replies": {botToken, (*Server).conversationsReplies},
	"users.info":            {botToken, (*Server).usersInfo},
	"usergroups.users.list": {botToken, (*Server).usergroupsUsersList},
	"views.open":            {botToken, (*Server).viewsOpen},
	"views.push":            {botToken, (*Server).viewsPush},
	"views.update":          {botToken, (*Server).viewsUpdate},
	"views.publish":         {botToken, (*Server).viewsPublish},
	"oauth.v2.access":       {noToken, (*Server).oauthV2Access},
}

type apiRequest struct {
	method string
	params map[string]string
	token  string
	// basic is the HTTP Basic credentials, if any (oauth.v2.access)
	basicUser, basicPass string
	grant                *grant // the bot token's, once checked
}

func (r *apiRequest) str(key string) string { return r.params[key] }

// grantKey is the workspace a bot token's calls count against (its team,
// or the enterprise of an org-wide install); "" for other tokens.
func (r *apiRequest) grantKey() string {
	g := r.grant
	switch {
	case g == nil:
		return ""
	case g.orgWide:
		return g.enterprise
	}
	return g.team
}

func (r *apiRequest) has(key string) bool {
	_, ok := r.params[key]
	return ok
}

// reply is the answer of a handler: a JSON body with "ok".
type reply struct {
	status     int
	retryAfter time.Duration
	body       map[string]any
}

func okReply(fields map[string]any) reply {
	body := map[string]any{"ok": true}
	maps.Copy(body, fields)
	return reply{status: http.StatusOK, body: body}
}

func errReply(code string) reply {
	return reply{status: http.StatusOK, body: map[string]any{"ok": false, "error": code}}
}

func errReplyMsgs(code string, messages []string) reply {
	r := errReply(code)
	r.body["response_metadata"] = map[string]any{"messages": messages}
	return r
}

func (r reply) errorCode() string {
	if ok, _ := r.body["ok"].(bool); ok {
		return ""
	}
	if e, _ := r.body["error"].(string); e != "" {
		return e
	}
	return "http_" + strconv.Itoa(r.status)
}

const maxRequestBody = 4 << 20

func (s *Server) serveAPI(w http.ResponseWriter, r *http.Request, method string) {
	req, bad := parseAPIRequest(r, method)
	rep := s.handleAPI(req, bad)
	s.mu.Lock()
	delay := s.takeDelayLocked(method)
	s.mu.Unlock()
	if delay > 0 && !clock.Sleep(r.Context(), delay) {
		return // the client gave up; the call stays applied
	}
	writeReply(w, rep)
}

func (s *Server) handleAPI(req *apiRequest, bad string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	rep := s.dispatchLocked(req, bad)
	s.calls = append(s.calls, Call{Method: req.method, Params: req.params, At: s.now(), Error: rep.errorCode()})
	s.notifyLocked()
	if code := rep.errorCode(); code != "" {
		s.logf("%s → %s", req.method, code)
	}
	return rep
}

func (s *Server) dispatchLocked(req *apiRequest, bad string) reply {
	m, known := apiMethods[req.method]
	if !known {
		return errReply("unknown_method")
	}
	if f := s.takeFailureLocked(req.method); f != nil {
		return f.reply()
	}
	if bad != "" {
		return errReply(bad)
	}
	if m.token != noToken {
		g, code := s.checkToken(req.token, m.token)
		if code == "" {
			code = s.scopeCheckLocked(g, req)
		}
		if code != "" {
			return errReply(code)
		}
		req.grant = g
	}
	return m.handler(s, req)
}

// checkToken returns the grant of a bot token (nil for the app token) or
// the error Slack answers: an expired rotating token is token_expired on
// every method, a revoked one token_revoked.
func (s *Server) checkToken(token string, kind tokenKind) (*grant, string) {
	if token == "" {
		return nil, "not_authed"
	}
	if token == s.cfg.AppToken {
		if kind == botToken {
			return nil, "not_allowed_token_type"
		}
		return nil, ""
	}
	g := s.tm.grants[token]
	switch {
	case g == nil:
		return nil, "invalid_auth"
	case kind == appToken:
		return nil, "not_allowed_token_type"
	case g.revoked:
		return nil, "token_revoked"
	case g.expires != 0 && s.now().Unix() >= g.expires:
		return nil, "token_expired"
	}
	return g, ""
}

// parseAPIRequest reads query, form or JSON parameters. bad is a Slack error
// code when the body cannot be read.
func parseAPIRequest(r *http.Request, method string) (req *apiRequest, bad string) {
	req = &apiRequest{method: method, params: map[string]string{}}
	for k, v := range r.URL.Query() {
		req.params[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil || len(body) > maxRequestBody {
		return req, "request_too_large"
	}
	ctype, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case len(body) == 0:
	case ctype == "application/json":
		bad = parseJSONParams(body, req.params)
	default:
		bad = parseFormParams(body, req.params)
	}
	req.basicUser, req.basicPass, _ = r.BasicAuth()
	req.token = req.params["token"]
	delete(req.params, "token")
	if req.token == "" {
		if a := r.Header.Get("Authorization"); strings.HasPrefix(a, "Bearer ") && method != "oauth.v2.access" {
			req.token = strings.TrimPrefix(a, "Bearer ")
		}
	}
	return req, bad
}

func parseJSONParams(body []byte, into map[string]string) string {
	v, err := decodeJSON(body)
	if err != nil {
		return "invalid_json"
	}
	obj, ok := asObj(v)
	if !ok {
		return "invalid_json"
	}
	for k, x := range obj {
		if str, ok := x.(string); ok {
			into[k] = str
		} else {
			into[k] = string(mustJSON(x))
		}
	}
	return ""
}

func parseFormParams(body []byte, into map[string]string) string {
	vals, err := url.ParseQuery(string(body))
	if err != nil {
		return "invalid_form_data"
	}
	for k, v := range vals {
		into[k] = v[0]
	}
	return ""
}

func writeReply(w http.ResponseWriter, rep reply) {
	if rep.status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", retryAfterSeconds(rep.retryAfter))
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(rep.status)
	_ = json.NewEncoder(w).Encode(rep.body)
}

// retryAfterSeconds rounds up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) string {
	secs := int64(math.Ceil(d.Seconds()))
	return strconv.FormatInt(max(secs, 1), 10)
}

// Calls returns a copy of every Web API call received, oldest first.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, len(s.calls))
	for i, c := range s.calls {
		c.Params = maps.Clone(c.Params)
		out[i] = c
	}
	return out
}

// CallCount returns how many calls of method were received (0 if none).
func (s *Server) CallCount(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, c := range s.calls {
		if c.Method == method {
			n++
		}
	}
	return n
}
