package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
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
	question, header, detail, channel, user, workspace, jsonFile, id, key string
	responders, mention, agent, print                                     string
	options, vetoes, confirms, notes, styles                              multiFlag
	// One tap: --display for each question, --default for each free-text one.
	display, proposed string
	multi             bool
	timeout           time.Duration
	responses         interaction.ResponseCount
	onTimeout         interaction.OnTimeout
	// required and other are nil unless a flag set them: --question with
	// options then defaults to required and no Other… (an approval a
	// Skip or free text must not pass), and --json keeps what it says.
	required, other *bool
	// Reaching people: --notify, --remind-after, --remind-every,
	// --escalate (repeatable, in order).
	notify                   interaction.Notify
	remindAfter, remindEvery time.Duration
	escalate                 []interaction.EscalationStep
}

// connectDeadline bounds how long `slackask ask` retries a server it
// cannot reach when --timeout does not say.
const connectDeadline = 30 * time.Second

func parseAskFlags(args []string, stdout io.Writer) (askFlags, error) {
	var f askFlags
	fs := flag.NewFlagSet("ask", flag.ContinueOnError)
	fs.StringVar(&f.question, "question", "", "the question to ask")
	fs.Var(&f.options, "option", "an option label (repeat for more); none means free text")
	fs.BoolVar(&f.multi, "multi", false, "allow several options")
	fs.StringVar(&f.header, "header", "", "a short header above the question")
	fs.StringVar(&f.detail, "detail", "", "more detail under the question (Markdown: bold, italic, code, links, lists; nothing pings)")
	fs.StringVar(&f.channel, "channel", "", "channel id to ask in (default SLACKASK_CHANNEL)")
	fs.StringVar(&f.user, "user", "", "user id to ask by direct message")
	fs.StringVar(&f.workspace, "workspace", "", "workspace (team id T…, or E… for a Grid org) to ask in (default the API key's, else the server's)")
	fs.Func("timeout", "how long the question stays open (e.g. 30m, or seconds); 0 = server default", func(v string) error {
		d, err := interaction.ParseDuration(v)
		f.timeout = d
		return err
	})
	fs.Func("notify", "how named responders learn of the ask: mention (default) or dm (each also gets it in a DM)", func(v string) error {
		if v != string(interaction.NotifyMention) && v != string(interaction.NotifyDM) {
			return fmt.Errorf("want mention or dm, not %q", v)
		}
		f.notify = interaction.Notify(v)
		return nil
	})
	fs.Func("remind-after", "post a reminder in the thread after this long (e.g. 15m) if unanswered", func(v string) error {
		d, err := interaction.ParseDuration(v)
		f.remindAfter = d
		return err
	})
	fs.Func("remind-every", "with --remind-after: repeat the reminder this often (at least 1m), at most 10 reminders", func(v string) error {
		d, err := interaction.ParseDuration(v)
		f.remindEvery = d
		return err
	})
	fs.Func("escalate", "an escalation step AFTER=IDS[@CHANNEL], e.g. 30m=U0123,S0456@C0789: after AFTER the ids may answer too and are told; @CHANNEL also posts the ask there (repeat for more steps, in order; --notify dm DMs them)", func(v string) error {
		st, err := parseEscalate(v)
		if err == nil {
			f.escalate = append(f.escalate, st)
		}
		return err
	})
	fs.StringVar(&f.jsonFile, "json", "", "read the whole request (POST /v1/asks body) from FILE, or - for stdin")
	fs.StringVar(&f.id, "id", "answer", "the question id used in the answer")
	fs.StringVar(&f.key, "idempotency-key", "", "reuse the ask made with this key instead of asking again")
	fs.StringVar(&f.responders, "responders", "", "comma-separated user (U…) and user-group (S…) ids allowed to answer (default SLACKASK_RESPONDERS)")
	fs.StringVar(&f.mention, "mention", "", "comma-separated user or user-group ids to mention in the message")
	fs.StringVar(&f.agent, "agent", "", "who asks, shown to the person: an id, or id:name")
	fs.Func("responses", "how many people must answer before the ask ends: a number (default 1) or all (every responder; needs --responders)", func(v string) error {
		c, err := interaction.ParseResponseCount(v)
		f.responses = c
		return err
	})
	fs.Var(&f.confirms, "confirm", "an --option LABEL whose choice asks Slack's confirmation dialog first (repeat for more)")
	fs.Var(&f.notes, "note", "LABEL[=required|optional]: choosing option LABEL asks \"Why?\" in a form; the answer carries the note (default required; repeat for more)")
	fs.Var(&f.styles, "style", "LABEL=primary|danger: the colour of option LABEL's button (repeat for more)")
	fs.Func("display", "how the options are drawn: auto (default: buttons for up to 5 short options), buttons or menu", func(v string) error {
		if !slices.Contains(interaction.Displays, interaction.Display(v)) {
			return fmt.Errorf("want auto, buttons or menu, not %q", v)
		}
		f.display = v
		return nil
	})
	fs.StringVar(&f.proposed, "default", "", "a proposed answer to a free-text question: Use as is answers with it in one tap, Edit… changes it first")
	fs.Var(&f.vetoes, "veto", "an --option LABEL whose choice ends the ask at once with that person's answer, whatever the others say (repeat for more)")
	fs.Func("on-timeout", "what the deadline does: expire (default; exit 4) or answer (answer with the responses that came in, if any)", func(v string) error {
		switch o := interaction.OnTimeout(strings.TrimSpace(v)); o {
		case interaction.OnTimeoutExpire, interaction.OnTimeoutAnswer:
			f.onTimeout = o
			return nil
		}
		return fmt.Errorf("want %s or %s", interaction.OnTimeoutExpire, interaction.OnTimeoutAnswer)
	})
	boolPtr := func(name string, dst **bool, val bool, usage string) {
		fs.BoolFunc(name, usage, func(v string) error {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return err
			}
			if *dst != nil && **dst != (b == val) {
				return fmt.Errorf("contradicts an earlier flag")
			}
			x := b == val
			*dst = &x
			return nil
		})
	}
	boolPtr("required", &f.required, true, "no Skip: the question must be answered (default with --option)")
	boolPtr("optional", &f.required, false, "offer Skip (default for a free-text question)")
	boolPtr("other", &f.other, true, "offer Other… for free text beside the options (default without --option)")
	boolPtr("no-other", &f.other, false, "no Other… button: the answer is one of the options (default with --option)")
	fs.StringVar(&f.print, "print", "json", "what to print: json (the answer JSON) or label (the chosen labels, one per line; typed text on its own line)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: slackask ask --question TEXT [--option LABEL]... [flags]\n"+
			"       slackask ask --json FILE\n\n"+
			"Asks through the slackask service at SLACKASK_URL (default %s) and prints the answer.\n"+
			"Exit codes: 0 answered, 1 error (e.g. the service cannot be reached), 2 invalid request,\n"+
			"3 cancelled, 4 timed out, 5 aborted (withdrawn: Ctrl-C, or DELETE /v1/asks/{id}).\n\n"+
			"With --option, the question is required and has no Other… unless --optional or --other say\n"+
			"otherwise: a Skip or typed text cannot pass an approval. --json requests keep what the JSON\n"+
			"says; flags given explicitly apply to each of its questions.\n\n"+
			"A deploy approved by 2 of 3 people, where any No vetoes:\n"+
			"  slackask ask --question 'Deploy v2.3?' --option Yes --option No --veto No \\\n"+
			"    --responders U0AAA,U0BBB,U0CCC --responses 2 --print label\n\nflags:\n", config.DefaultURL)
		printFlags(fs.Output(), fs)
	}
	if err := parseFlags(fs, args, stdout); err != nil {
		return f, err
	}
	if (f.jsonFile == "") == (f.question == "") {
		return f, errors.New("give either --question or --json")
	}
	if f.print != "json" && f.print != "label" {
		return f, fmt.Errorf("--print %q: use json or label", f.print)
	}
	if f.question != "" {
		for _, v := range f.vetoes {
			if !slices.Contains(f.options, v) {
				return f, fmt.Errorf("--veto %q: not one of the --option labels", v)
			}
		}
		if len(f.options) == 0 && f.other != nil && !*f.other {
			return f, errors.New("--no-other needs --option: without options nobody could answer")
		}
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
		b, err := io.ReadAll(io.LimitReader(r, 1<<20))
		if err != nil {
			return in, fmt.Errorf("--json: %w", err)
		}
		// The same names as the HTTP API takes, exactly: a misspelt or
		// mis-cased field would otherwise be dropped on the way to it.
		if err := interaction.CheckFields(b, &in); err != nil {
			return in, fmt.Errorf("--json: %s", interaction.ErrorMessage(err))
		}
		if err := json.Unmarshal(interaction.ResolveAliases(b), &in); err != nil {
			return in, fmt.Errorf("--json: %w", err)
		}
	} else {
		q := interaction.Question{ID: f.id, Question: f.question, Header: f.header, Detail: f.detail, MultiSelect: f.multi}
		for _, o := range f.options {
			q.Options = append(q.Options, interaction.Option{Label: o})
		}
		if len(q.Options) > 0 {
			// An approval: Skip or typed text must not let a script go on.
			no := false
			q.Required, q.AllowOther = true, &no
		}
		in.Questions = []interaction.Question{q}
	}
	for i := range in.Questions {
		q := &in.Questions[i]
		if f.required != nil {
			q.Required = *f.required
		}
		if f.other != nil {
			q.AllowOther = nil
			if !*f.other {
				no := false
				q.AllowOther = &no
			}
		}
	}
	if err := markOptions(in.Questions, "--veto", f.vetoes, func(o *interaction.Option, _ string) error { o.Veto = true; return nil }); err != nil {
		return in, err
	}
	if err := markOptions(in.Questions, "--confirm", f.confirms, func(o *interaction.Option, _ string) error {
		o.Confirm = &interaction.Confirm{}
		return nil
	}); err != nil {
		return in, err
	}
	if err := markOptions(in.Questions, "--note", f.notes, func(o *interaction.Option, v string) error {
		o.Note = cmp.Or(v, interaction.NoteRequired)
		if o.Note != interaction.NoteRequired && o.Note != interaction.NoteOptional {
			return fmt.Errorf("want LABEL=required or LABEL=optional, not %q", v)
		}
		return nil
	}); err != nil {
		return in, err
	}
	if err := markOptions(in.Questions, "--style", f.styles, func(o *interaction.Option, v string) error {
		if v != interaction.StylePrimary && v != interaction.StyleDanger {
			return fmt.Errorf("want LABEL=primary or LABEL=danger, not %q", v)
		}
		o.Style = v
		return nil
	}); err != nil {
		return in, err
	}
	for i := range in.Questions {
		if f.display != "" {
			in.Questions[i].Display = interaction.Display(f.display)
		}
		if f.proposed != "" && len(in.Questions[i].Options) == 0 {
			in.Questions[i].Default = f.proposed
		}
	}
	if !f.responses.IsZero() {
		in.Responses = f.responses
	}
	if f.onTimeout != "" {
		in.OnTimeout = f.onTimeout
	}
	if f.channel != "" {
		in.Channel = f.channel
	}
	if f.user != "" {
		in.User = f.user
	}
	if f.workspace != "" {
		in.Workspace = f.workspace
	}
	if f.timeout > 0 {
		in.Timeout = interaction.Duration(f.timeout)
	}
	if f.notify != "" {
		in.Notify = f.notify
	}
	if f.remindAfter > 0 {
		in.RemindAfter = interaction.Duration(f.remindAfter)
	}
	if f.remindEvery > 0 {
		in.RemindEvery = interaction.Duration(f.remindEvery)
	}
	if len(f.escalate) > 0 {
		in.Escalation = slices.Clone(f.escalate)
		if f.notify == interaction.NotifyDM {
			for i := range in.Escalation {
				in.Escalation[i].Notify = interaction.NotifyDM
			}
		}
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

// markOptions applies set to each option named by specs (LABEL, or for
// --note and --style LABEL=VALUE, VALUE passed to set) of any question; a
// label no question offers is an error naming flag.
func markOptions(qs []interaction.Question, flag string, specs []string, set func(o *interaction.Option, value string) error) error {
	for _, spec := range specs {
		l, v := spec, ""
		if i := strings.LastIndex(spec, "="); i >= 0 && (flag == "--note" || flag == "--style") {
			l, v = spec[:i], spec[i+1:] // the value is after the last "=": a label may hold one
		}
		found := false
		for i := range qs {
			for j := range qs[i].Options {
				if qs[i].Options[j].Label == l {
					if err := set(&qs[i].Options[j], v); err != nil {
						return fmt.Errorf("%s %q: %w", flag, spec, err)
					}
					found = true
				}
			}
		}
		if !found {
			return fmt.Errorf("%s %q: no question has an option with that label", flag, l)
		}
	}
	return nil
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
	f, err := parseAskFlags(args, stdout)
	if err != nil {
		return flagFailed(stderr, "ask", err)
	}
	in, err := f.input(stdin)
	if err != nil {
		fmt.Fprintf(stderr, "slackask ask: %v\n", err)
		return 2
	}
	cfg, ok := clientConfig("ask", stderr)
	if !ok {
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
		OnCreated: func(ask interaction.Ask) {
			switch {
			case ask.Permalink != "":
				fmt.Fprintf(stderr, "waiting for an answer: %s\n", ask.Permalink)
			case ask.Posting == interaction.PostingQueued:
				fmt.Fprintf(stderr, "waiting for an answer (ask %s, queued for posting: the channel is busy, place %d)\n", ask.ID, ask.QueuePlace)
			default:
				fmt.Fprintf(stderr, "waiting for an answer (ask %s)\n", ask.ID)
			}
		},
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
	case client.IsForeign(err):
		// Said once, without the body: it is not ours to print.
		fmt.Fprintf(stderr, "slackask ask: %s; is SLACKASK_URL right?\n", interaction.ErrorMessage(err))
	case err != nil && ask.ID == "" && client.IsUnreachable(err):
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

// parseEscalate reads an --escalate value, AFTER=IDS[@CHANNEL]: a
// duration, comma-separated user and user-group ids, and optionally the
// channel to post the ask in too. The ids are checked by the server.
func parseEscalate(v string) (interaction.EscalationStep, error) {
	var st interaction.EscalationStep
	after, rest, ok := strings.Cut(v, "=")
	if !ok {
		return st, fmt.Errorf("%q: want AFTER=IDS[@CHANNEL], e.g. 30m=U0123,S0456@C0789", v)
	}
	d, err := interaction.ParseDuration(after)
	if err != nil {
		return st, err
	}
	ids, channel, _ := strings.Cut(rest, "@")
	st.After, st.Responders, st.Channel = interaction.Duration(d), splitIDs(ids), strings.TrimSpace(channel)
	if len(st.Responders) == 0 {
		return st, fmt.Errorf("%q: no user or user-group ids after =", v)
	}
	return st, nil
}
