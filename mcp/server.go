package mcp

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rs/zerolog"

	"github.com/slackask/slackask/interaction"
)

// DefaultProgressInterval is how often a waiting tool call sends a progress
// notification when Options.ProgressInterval is zero.
const DefaultProgressInterval = 10 * time.Second

// sessionIdleTimeout closes streamable HTTP sessions that have had no request
// in flight for this long, so that abandoned sessions do not pile up. A call
// waiting for an answer keeps its session alive; a client that comes back
// after the timeout gets 404 and, as the MCP spec requires, starts a new
// session.
const sessionIdleTimeout = time.Hour

// Options configure the MCP server. The zero value is usable.
type Options struct {
	// ProgressInterval is how often a tool call that waits for an answer
	// sends a progress notification to a client that gave a progress token.
	// Zero means DefaultProgressInterval; a negative value sends none.
	ProgressInterval time.Duration

	// Logger receives the server's log: one line per ask created and ended,
	// and the SDK's warnings and errors. The zero Logger logs nothing.
	Logger zerolog.Logger

	// DefaultChannel is the channel to ask in when a call names neither a
	// channel nor a user. Empty leaves the choice to the AskService (e.g.
	// SLACKASK_CHANNEL of the server).
	DefaultChannel string

	// Context, when not nil, bounds the life of the server: once it is done,
	// every tool call still waiting withdraws its ask and returns
	// ASK_ABORTED, so that an HTTP server can shut down without waiting for
	// people to answer. Nil means never. ServeStdio also ends its calls when
	// its own ctx is done.
	Context context.Context
}

func (o Options) progressInterval() time.Duration {
	if o.ProgressInterval == 0 {
		return DefaultProgressInterval
	}
	return o.ProgressInterval
}

// NewServer returns an MCP server whose tools, ask_user_question and
// get_answer, ask people through svc. Connect it to any MCP transport; [Handler] and
// [ServeStdio] do so for streamable HTTP and stdio.
func NewServer(svc interaction.AskService, opts Options) *mcpsdk.Server {
	return newServer(svc, opts, nil, nil)
}

func newServer(svc interaction.AskService, opts Options, calls *httpCalls, cn *cancels) *mcpsdk.Server {
	logger := opts.Logger.With().Str("component", "mcp").Logger()
	srv := mcpsdk.NewServer(&mcpsdk.Implementation{
		Name:    "slackask",
		Title:   "slackask: ask a person in Slack",
		Version: version(),
	}, &mcpsdk.ServerOptions{
		Instructions: serverInstructions,
		Logger:       sdkLogger(logger),
	})
	t := &askTool{
		svc:            svc,
		log:            logger,
		interval:       opts.progressInterval(),
		defaultChannel: opts.DefaultChannel,
		base:           opts.Context,
		calls:          calls,
		cancels:        cn,
	}
	srv.AddTool(toolDefinition(), t.handle)
	srv.AddTool(getAnswerDefinition(), t.handleGetAnswer)
	return srv
}

// Handler returns an http.Handler that serves the MCP server of [NewServer]
// over the streamable HTTP transport (stateful sessions, responses and
// progress notifications as server-sent events). Mount it at /mcp; it does
// no authentication of its own.
//
// A call waiting for an answer withdraws its ask when the client cancels it
// deliberately or deletes its session; a call the client cut by timing out,
// or whose HTTP request dropped, ends with the ask left open for get_answer
// (see the package doc). Sessions with no request in flight for an hour are
// closed.
func Handler(svc interaction.AskService, opts Options) http.Handler {
	calls, cn := newHTTPCalls(), newCancels()
	srv := newServer(svc, opts, calls, cn)
	return &httpHandler{
		calls:   calls,
		cancels: cn,
		inner: mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
			&mcpsdk.StreamableHTTPOptions{
				Logger:         sdkLogger(opts.Logger.With().Str("component", "mcp").Logger()),
				SessionTimeout: sessionIdleTimeout,
			}),
	}
}

// ServeStdio serves one MCP session of the server of [NewServer] over in and
// out (newline-delimited JSON-RPC, as an MCP host talks to a subprocess). It
// returns nil when the client closes the session (in reaches EOF) or ctx is
// done, and the transport's error otherwise. Tool calls still waiting then
// withdraw their asks (ASK_ABORTED) before it returns; as the session is
// closing, their results may not be sent. If in is an io.Closer it is closed on
// return, as the SDK's stdio transport does with os.Stdin; out is never
// closed.
func ServeStdio(ctx context.Context, svc interaction.AskService, opts Options, in io.Reader, out io.Writer) error {
	base, cancel := context.WithCancel(ctx)
	defer cancel()
	if opts.Context != nil {
		defer context.AfterFunc(opts.Context, cancel)()
	}
	opts.Context = base
	cn := newCancels()
	srv := newServer(svc, opts, nil, cn)

	rc, ok := in.(io.ReadCloser)
	if !ok {
		rc = io.NopCloser(in)
	}
	ss, err := srv.Connect(ctx, cancelTransport{&mcpsdk.IOTransport{Reader: rc, Writer: nopWriteCloser{out}}, cn}, nil)
	if err != nil {
		return err
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err := <-ended:
		return err
	case <-base.Done():
		// Close waits for the calls in flight; base being done makes them
		// withdraw their asks and return.
		_ = ss.Close()
		<-ended
		return nil
	}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// sdkLogger passes the SDK's warnings and errors to logger; its info lines
// (a session connected, ended) are too chatty for a server's log.
func sdkLogger(logger zerolog.Logger) *slog.Logger {
	if logger.GetLevel() < zerolog.WarnLevel {
		logger = logger.Level(zerolog.WarnLevel)
	}
	return slog.New(zerolog.NewSlogHandler(logger.With().Str("lib", "mcp-go-sdk").Logger()))
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}
