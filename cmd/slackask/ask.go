package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/slackask/slackask/client"
	"github.com/slackask/slackask/config"
	"github.com/slackask/slackask/interaction"
)

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type askFlags struct {
	question, header, detail, channel, user, jsonFile, id, key string
	responders, mention, agent, print                          string
	options                                                    multiFlag
	multi                                                      bool
	timeout                                                    time.Duration
}

// connectDeadline bounds how long `slackask ask` retries a server it
// cannot reach when --timeout does not say.
const connectDeadline = 30 * time.Second

func parseAskFlags(args []string, stderr io.Writer) (askFlags, error) {
	var f askFlags
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.question, "question", "", "the question to ask")
	fs.Var(&f.options, "option", "an option label (repeat for more); none means free text")
	fs.BoolVar(&f.multi, "multi", false, "allow several options")
	fs.StringVar(&f.header, "header", "", "a short header above the question")
	fs.StringVar(&f.detail, "detail", "", "more detail under the question (Markdown: bold, italic, code, links, lists; nothing pings)")
	fs.StringVar(&f.channel, "channel", "", "channel id to ask in (default SLACKASK_CHANNEL)")
	fs.StringVar(&f.user, "user", "", "user id to ask by direct message")
	fs.Func("timeout", "how long the question stays open (e.g. 30m, or seconds); 0 = server default", func(v string) error {
		d, err := interaction.ParseDuration(v)
		f.timeout = d
		return err
	})
	fs.StringVar(&f.jsonFile, "json", "", "read the whole request (POST /v1/asks body) from FILE, or - for stdin")
	fs.StringVar(&f.id, "id", "answer", "the question id used in the answer")
	fs.StringVar(&f.key, "idempotency-key", "", "reuse the ask made with this key instead of asking again")
	fs.StringVar(&f.responders, "responders", "", "comma-separated user (U…) and user-group (S…) ids allowed to answer (default SLACKASK_RESPONDERS)")
	fs.StringVar(&f.mention, "mention", "", "comma-separated user or user-group ids to mention in the message")
	fs.StringVar(&f.agent, "agent", "", "who asks, shown to the person: an id, or id:name")
	fs.StringVar(&f.print, "print", "json", "what to print: json (the answer JSON) or label (the chosen labels, one per line; typed text on its own line)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: slackask ask --question TEXT [--option LABEL]... [flags]\n"+
			"       slackask ask --json FILE\n\n"+
			"Asks through the slackask service at SLACKASK_URL (default %s) and prints the answer.\n"+
			"Exit codes: 0 answered, 1 error (e.g. the service cannot be reached), 2 invalid request,\n"+
			"3 cancelled, 4 timed out, 5 withdrawn (Ctrl-C).\n\nflags:\n", config.DefaultURL)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if (f.jsonFile == "") == (f.question == "") {
		return f, errors.New("give either --question or --json")
	}
	if f.print != "json" && f.print != "label" {
		return f, fmt.Errorf("--print %q: use json or label", f.print)
	}
	return f, nil
}

func (f askFlags) input(stdin io.Reader) (interaction.AskInput, error) {
	var in interaction.AskInput
	if f.jsonFile != "" {
		var r io.Reader = stdin
		if f.jsonFile != "-" {
			file, err := os.Open(f.jsonFile)
			if err != nil {
				return in, err
			}
			defer file.Close()
			r = file
		}
		if err := json.NewDecoder(io.LimitReader(r, 1<<20)).Decode(&in); err != nil {
			return in, fmt.Errorf("--json: %w", err)
		}
	} else {
		q := interaction.Question{ID: f.id, Question: f.question, Header: f.header, Detail: f.detail, MultiSelect: f.multi}
		for _, o := range f.options {
			q.Options = append(q.Options, interaction.Option{Label: o})
		}
		in.Questions = []interaction.Question{q}
	}
	if f.channel != "" {
		in.Channel = f.channel
	}
	if f.user != "" {
		in.User = f.user
	}
	if f.timeout > 0 {
		in.Timeout = interaction.Duration(f.timeout)
	}
	if f.key != "" {
		in.IdempotencyKey = f.key
	}
	if f.responders != "" {
		in.Responders = splitIDs(f.responders)
	}
	if f.mention != "" {
		in.Mention = splitIDs(f.mention)
	}
	if f.agent != "" {
		id, name, _ := strings.Cut(f.agent, ":")
		in.Agent = &interaction.Agent{ID: strings.TrimSpace(id), Name: strings.TrimSpace(name)}
	}
	return in, nil
}

// splitIDs splits a comma-separated list, dropping spaces and empty items.
func splitIDs(s string) []string {
	var ids []string
	for _, id := range strings.Split(s, ",") {
		if id = strings.TrimSpace(id); id != "" {
			ids = append(ids, id)
		}
	}
	return ids
}

// printLabels writes the chosen labels of every answered question, one per
// line, and text typed instead on its own line.
func printLabels(w io.Writer, ans interaction.Answer) {
	for _, item := range ans.Answers {
		for _, l := range item.Selected {
			fmt.Fprintln(w, l)
		}
		if item.Custom != "" {
			fmt.Fprintln(w, item.Custom)
		}
	}
}

// cmdAsk asks through a running service and prints the answer JSON. Exit
// codes: 0 answered, 2 invalid request, 3 cancelled, 4 timed out, 5
// aborted (Ctrl-C withdraws the ask), 1 anything else.
func cmdAsk(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	f, err := parseAskFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "slackask ask: %v\n", err)
		return 2
	}
	in, err := f.input(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "slackask ask: %v\n", err)
		return 2
	}
	cfg, err := config.Load()
	if err == nil {
		err = cfg.ValidateClient()
	}
	if err != nil {
		fmt.Fprintf(stderr, "slackask ask: %v\n", err)
		return 2
	}
	c := client.New(cfg.URL, cfg.APIToken, nil)
	// A server that cannot be reached is retried, saying so, until --timeout
	// (or connectDeadline) has passed; then the command fails.
	createFor := connectDeadline
	if f.timeout > 0 {
		createFor = f.timeout
	}
	// With --timeout, a server that goes away while waiting is retried
	// until the ask would have timed out, and a connect deadline more.
	waitFor := time.Duration(0)
	if f.timeout > 0 {
		waitFor = f.timeout + connectDeadline
	}
	ask, err := c.AskAndWaitWith(ctx, in, client.WaitOptions{
		CreateFor: createFor,
		WaitFor:   waitFor,
		OnRetry: func(op string, err error, pause time.Duration) {
			if op == "create" {
				fmt.Fprintf(stderr, "slackask ask: cannot reach slackask at %s: retrying in %s (%v)\n", cfg.URL, pause.Round(time.Millisecond), err)
			} else {
				fmt.Fprintf(stderr, "slackask ask: lost slackask at %s while waiting: retrying in %s (%v)\n", cfg.URL, pause.Round(time.Millisecond), err)
			}
		},
	})
	code := client.ExitCode(ask, err)
	switch {
	case err != nil && ask.ID == "" && interaction.ErrorCode(err) == interaction.Internal:
		fmt.Fprintf(stderr, "slackask ask: cannot reach slackask at %s; gave up after %s: %v\n", cfg.URL, createFor, err)
	case err != nil:
		fmt.Fprintf(stderr, "slackask ask: %v\n", err)
	case ask.Status == interaction.StatusAnswered && ask.Answer != nil && f.print == "label":
		printLabels(stdout, *ask.Answer)
	case ask.Status == interaction.StatusAnswered && ask.Answer != nil:
		out, _ := json.Marshal(ask.Answer)
		fmt.Fprintf(stdout, "%s\n", out)
	default:
		_, rerr := ask.Result()
		fmt.Fprintf(stderr, "slackask ask: %s: %v\n", ask.Status, rerr)
	}
	return code
}
