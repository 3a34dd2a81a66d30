package devui

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/slackask/slackask/internal/slackfake"
)

//go:embed assets
var assets embed.FS

var pageTmpl = template.Must(template.New("page.html").ParseFS(assets, "assets/page.html"))

// Options configure the UI. Zero fields take the defaults documented on
// each field.
type Options struct {
	// Channel is the conversation shown first (default: the first one).
	Channel string
	// User is the person acting at first (default: the first person).
	User string
	// GroupNames maps user-group ids (S…) to their handles, for mentions;
	// the emulator knows groups only by id.
	GroupNames map[string]string
	// AppName is the bot's display name (default "slackask").
	AppName string
	// APIURL is the slackask HTTP API's base URL, shown in hints.
	APIURL string
	// Curl is a ready-to-paste command that asks something, shown in an
	// empty conversation.
	Curl string
	// Now and Location render <!date^…> and message times (defaults
	// time.Now, time.Local).
	Now      func() time.Time
	Location *time.Location
	// ActTimeout bounds one action: delivering its payload and waiting for
	// the app's ack (default 10s; the emulator itself gives up on an ack
	// after its Config.AckTimeout).
	ActTimeout time.Duration
	// Logf receives a line per failed action (default: discarded).
	Logf func(format string, args ...any)
}

// UI is the web page of the Slack emulator: it shows the emulator's
// conversations as a Slack client would, live, and acts in them as the
// chosen person through slackfake.Person, so every click reaches the app
// over Socket Mode as a real payload. It is an http.Handler.
type UI struct {
	fake        *slackfake.Server
	opts        Options
	appInitials string

	done      chan struct{}
	closeOnce sync.Once

	mu     sync.Mutex
	errors map[string]map[string]string // view id → errors found by the client itself
}

// New returns the UI of fake.
func New(fake *slackfake.Server, opts Options) *UI {
	if opts.AppName == "" {
		opts.AppName = "slackask"
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Location == nil {
		opts.Location = time.Local
	}
	if opts.ActTimeout <= 0 {
		opts.ActTimeout = 10 * time.Second
	}
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	ini := initials(opts.AppName)
	if opts.AppName == "slackask" {
		ini = "SA"
	}
	return &UI{fake: fake, opts: opts, appInitials: ini, done: make(chan struct{}), errors: map[string]map[string]string{}}
}

// Close ends the event streams of open pages (an http.Server's Shutdown
// waits for them otherwise). The UI keeps answering other requests.
func (u *UI) Close() { u.closeOnce.Do(func() { close(u.done) }) }

func (u *UI) names() Names {
	n := Names{Users: map[string]string{}, Groups: map[string]string{}, Channels: map[string]string{}, Now: u.opts.Now, Location: u.opts.Location}
	for _, usr := range u.fake.Users() {
		n.Users[usr.ID] = usr.Name
	}
	for id, h := range u.opts.GroupNames {
		n.Groups[id] = h
	}
	for _, ch := range u.fake.Channels() {
		if !ch.IsIM {
			n.Channels[ch.ID] = ch.Name
		}
	}
	return n
}

func (u *UI) localErrors(viewID string) map[string]string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.errors[viewID]
}

func (u *UI) setLocalErrors(viewID string, errs map[string]string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if errs == nil {
		delete(u.errors, viewID)
		return
	}
	u.errors[viewID] = errs
}

// ServeHTTP serves the page (GET /), its live part (GET /app), the event
// stream (GET /events), actions (POST /act) and the static files.
func (u *UI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: https: http:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	if !hostAllowed(r.Host) {
		http.Error(w, "devui: this page answers only to localhost or an IP address (DNS rebinding guard)", http.StatusMisdirectedRequest)
		return
	}
	switch {
	case r.URL.Path == "/" && (r.Method == http.MethodGet || r.Method == http.MethodHead):
		u.servePage(w, r, "page.html")
	case r.URL.Path == "/app" && r.Method == http.MethodGet:
		u.servePage(w, r, "app")
	case r.URL.Path == "/events" && r.Method == http.MethodGet:
		u.serveEvents(w, r)
	case r.URL.Path == "/act":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		u.serveAct(w, r)
	case strings.HasPrefix(r.URL.Path, "/static/") && r.Method == http.MethodGet:
		u.serveStatic(w, r)
	case r.URL.Path == "/favicon.ico":
		w.WriteHeader(http.StatusNoContent)
	default:
		http.NotFound(w, r)
	}
}

// hostAllowed refuses Host names other than localhost and IP literals, so
// a web site cannot reach the page through DNS rebinding.
func hostAllowed(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "" {
		return false
	}
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	return net.ParseIP(host) != nil
}

func (u *UI) servePage(w http.ResponseWriter, r *http.Request, name string) {
	q := r.URL.Query()
	p := u.build(q.Get("as"), q.Get("c"), q.Get("thread"))
	if ts := q.Get("msg"); ts != "" {
		p.highlight(ts)
	}
	if name == "page.html" && p.Channel.IsHome && r.Method == http.MethodGet {
		// Loading the page on the Home tab is opening it, as in Slack: the
		// app hears app_home_opened (the page's own navigation says so
		// with the open-home action).
		as := p.As.ID
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), u.opts.ActTimeout)
			defer cancel()
			if err := u.fake.Person(as).OpenHome(ctx); err != nil {
				u.opts.Logf("devui: app_home_opened for %s: %v", as, err)
			}
		}()
	}
	var buf bytes.Buffer
	if err := pageTmpl.ExecuteTemplate(&buf, name, p); err != nil {
		u.opts.Logf("devui: rendering the page: %v", err)
		http.Error(w, "devui: rendering failed: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func (u *UI) serveStatic(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/static/")
	if strings.Contains(name, "/") || name == "" || name == "page.html" {
		http.NotFound(w, r)
		return
	}
	data, err := fs.ReadFile(assets, "assets/"+name)
	if err != nil {
		http.NotFound(w, r)
		return
	}
	ct := mime.TypeByExtension(name[strings.LastIndexByte(name, '.'):])
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(data)
}

// serveEvents streams the emulator's events as server-sent events: one
// "change" event per slackfake.Event, with its type, channel, user and
// view, and a comment every 15 s to keep the connection open.
func (u *UI) serveEvents(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	events, cancel := u.fake.Subscribe()
	defer cancel()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "retry: 1000\n\n")
	if rc.Flush() != nil {
		return
	}
	tick := time.NewTicker(15 * time.Second)
	defer tick.Stop()
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return
			}
			data, _ := json.Marshal(map[string]string{"type": string(ev.Type), "channel": ev.Channel, "ts": ev.TS, "user": ev.User, "view": ev.ViewID})
			if _, err := fmt.Fprintf(w, "event: change\ndata: %s\n\n", data); err != nil {
				return
			}
		case <-tick.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		case <-r.Context().Done():
			return
		case <-u.done:
			return
		}
		if rc.Flush() != nil {
			return
		}
	}
}

// actRequest is what the page posts to /act.
type actRequest struct {
	As       string   `json:"as"`
	Kind     string   `json:"kind"` // select, click, submit, close
	Channel  string   `json:"channel"`
	TS       string   `json:"ts"`
	ViewID   string   `json:"viewId"`
	BlockID  string   `json:"blockId"`
	ActionID string   `json:"actionId"`
	Values   []string `json:"values"`
	Inputs   []struct {
		BlockID  string `json:"blockId"`
		ActionID string `json:"actionId"`
		Value    string `json:"value"`
	} `json:"inputs"`
}

// actResponse is /act's answer.
type actResponse struct {
	OK         bool              `json:"ok"`
	Error      string            `json:"error,omitempty"`
	ViewErrors map[string]string `json:"viewErrors,omitempty"`
	Ack        json.RawMessage   `json:"ack,omitempty"`
}

func (u *UI) serveAct(w http.ResponseWriter, r *http.Request) {
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType, actResponse{Error: "send application/json"})
		return
	}
	if o := r.Header.Get("Origin"); o != "" {
		if ou, err := url.Parse(o); err != nil || ou.Host != r.Host {
			writeJSON(w, http.StatusForbidden, actResponse{Error: "cross-origin request refused"})
			return
		}
	}
	var req actRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, actResponse{Error: "malformed request: " + err.Error()})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), u.opts.ActTimeout)
	defer cancel()
	resp, err := u.act(ctx, req)
	if err != nil {
		resp.Error = describe(err)
		u.opts.Logf("devui: %s as %s: %v", req.Kind, req.As, err)
		writeJSON(w, http.StatusOK, resp)
		return
	}
	resp.OK = true
	writeJSON(w, http.StatusOK, resp)
}

var errBadAct = errors.New("unknown action")

// act performs one action as the person req.As.
func (u *UI) act(ctx context.Context, req actRequest) (actResponse, error) {
	p := u.fake.Person(req.As)
	find := slackfake.And(slackfake.ByBlockID(req.BlockID), slackfake.ByActionID(req.ActionID))
	var resp actResponse
	var err error
	switch {
	case req.Kind == "select" && req.ViewID != "":
		resp.Ack, err = p.SelectInView(ctx, req.ViewID, find, req.Values...)
	case req.Kind == "select":
		resp.Ack, err = p.Select(ctx, req.Channel, req.TS, find, req.Values...)
	case req.Kind == "clear":
		resp.Ack, err = p.Clear(ctx, req.Channel, req.TS, find)
	case req.Kind == "open-home":
		err = p.OpenHome(ctx)
	case req.Kind == "click" && req.ViewID != "" && u.isHome(req.As, req.ViewID):
		resp.Ack, err = p.ClickInHome(ctx, find)
	case req.Kind == "click" && req.ViewID != "":
		resp.Ack, err = p.ClickInView(ctx, req.ViewID, find)
	case req.Kind == "click":
		resp.Ack, err = p.Click(ctx, req.Channel, req.TS, find)
	case req.Kind == "submit":
		for _, in := range req.Inputs {
			f := slackfake.And(slackfake.ByBlockID(in.BlockID), slackfake.ByActionID(in.ActionID))
			if err := p.Type(ctx, req.ViewID, f, in.Value); err != nil {
				return resp, err
			}
		}
		resp.Ack, err = p.Submit(ctx, req.ViewID)
		var verr *slackfake.ViewErrors
		switch {
		case errors.As(err, &verr):
			resp.ViewErrors = verr.Errors
			if verr.Local {
				u.setLocalErrors(req.ViewID, verr.Errors)
			} else {
				u.setLocalErrors(req.ViewID, nil)
			}
			if len(verr.Unknown) > 0 {
				return resp, fmt.Errorf("the app's errors name blocks that are not inputs (%s); Slack shows the person a generic error", strings.Join(verr.Unknown, ", "))
			}
			return resp, nil // the modal shows them
		case err == nil:
			u.setLocalErrors(req.ViewID, nil)
		}
	case req.Kind == "close":
		u.setLocalErrors(req.ViewID, nil)
		resp.Ack, err = p.Close(ctx, req.ViewID)
	default:
		err = fmt.Errorf("%w %q", errBadAct, req.Kind)
	}
	return resp, err
}

// isHome reports whether viewID is the Home tab of person as.
func (u *UI) isHome(as, viewID string) bool {
	h, ok := u.fake.Home(as)
	return ok && h.ID == viewID
}

// describe words an action's error for the person at the page.
func describe(err error) string {
	switch {
	case errors.Is(err, slackfake.ErrAckTimeout):
		return "The app did not acknowledge in time: Slack would show the person an error."
	case errors.Is(err, slackfake.ErrNoConnection):
		return "slackask is not connected to the emulator (Socket Mode)."
	case errors.Is(err, slackfake.ErrBadAck):
		return "The app answered the submission with something Slack cannot use: " + err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		return "The action timed out."
	}
	return err.Error()
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
